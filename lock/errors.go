package lock

import (
	"errors"
	"fmt"
)

// Errors returned by the package; all start with "lock:". Compare with
// errors.Is: ErrWaitTimeout wraps ErrNotObtained, and a wait stopped by its
// context matches both ErrNotObtained and ctx.Err().
var (
	// ErrNotObtained means the lock is held by someone else (TryLock), or a
	// wait ended without obtaining it.
	ErrNotObtained = errors.New("lock: not obtained")
	// ErrWaitTimeout means Lock gave up at the WithWait deadline. It wraps
	// ErrNotObtained.
	ErrWaitTimeout = fmt.Errorf("%w: wait deadline reached", ErrNotObtained)
	// ErrNotHeld means the lease does not hold the lock (any more): it was
	// released already, it expired, or another holder has it now. The
	// operation changed nothing in Redis.
	ErrNotHeld = errors.New("lock: not held")
	// ErrLockLost is the cause reported by Lease.Err and Lease.Context once
	// the lock is known lost while it was meant to be held.
	ErrLockLost = errors.New("lock: lost")
	// ErrReleased is the cause reported by Lease.Err and Lease.Context after
	// Unlock succeeded.
	ErrReleased = errors.New("lock: released")
	// ErrInvalidName means the lock name is empty.
	ErrInvalidName = errors.New("lock: empty name")
	// ErrInvalidTTL means the TTL is below one millisecond, the resolution of
	// Redis key expiry (or, for Redlock, not above its drift allowance).
	ErrInvalidTTL = errors.New("lock: ttl must be at least 1ms")
	// ErrClosed means the Client or Redlock was closed.
	ErrClosed = errors.New("lock: client closed")
)

// errRetriesExhausted ends a wait bounded by withMaxRetries (tests).
var errRetriesExhausted = fmt.Errorf("%w: retries exhausted", ErrNotObtained)

// waitError is returned when a wait is stopped by its context: it matches
// ErrNotObtained and the context's error.
type waitError struct{ ctxErr error }

func (e *waitError) Error() string   { return ErrNotObtained.Error() + ": " + e.ctxErr.Error() }
func (e *waitError) Unwrap() []error { return []error{ErrNotObtained, e.ctxErr} }
