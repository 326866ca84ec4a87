package lock

import (
	"errors"
	"fmt"
)

// Errors returned by the package. Compare with errors.Is: the wait errors wrap
// ErrNotObtained, and a wait stopped by its context wraps both ErrNotObtained
// and ctx.Err().
var (
	// ErrNotObtained means the lock is held by someone else (TryLock), or a
	// wait ended without obtaining it.
	ErrNotObtained = errors.New("lock: not obtained")
	// ErrWaitTimeout means Lock gave up at the WithWaitTimeout deadline. It
	// wraps ErrNotObtained.
	ErrWaitTimeout = fmt.Errorf("%w: wait deadline reached", ErrNotObtained)
	// ErrRetriesExhausted means Lock gave up after WithMaxRetries attempts. It
	// wraps ErrNotObtained.
	ErrRetriesExhausted = fmt.Errorf("%w: retries exhausted", ErrNotObtained)
	// ErrNotHeld means the handle does not hold the lock (any more): it was
	// released already, it expired, or another holder has it now. The
	// operation changed nothing in Redis.
	ErrNotHeld = errors.New("lock: not held")
	// ErrLockLost is the cause reported by Err and by the Context of a handle
	// whose lock is known to be lost while it was meant to be held.
	ErrLockLost = errors.New("lock: lost")
	// ErrReleased is the cause reported by Err and by the Context of a handle
	// after its Unlock succeeded.
	ErrReleased = errors.New("lock: released")
	// ErrInvalidName means the lock name is empty.
	ErrInvalidName = errors.New("lock: empty name")
	// ErrInvalidTTL means the TTL is below one millisecond, the resolution of
	// Redis key expiry.
	ErrInvalidTTL = errors.New("lock: ttl must be at least 1ms")
	// ErrClosed means the Client or Redlock was closed.
	ErrClosed = errors.New("lock: client closed")
)

// waitError is returned when a wait is stopped by its context: it matches
// ErrNotObtained and the context's error.
type waitError struct{ ctxErr error }

func (e *waitError) Error() string   { return ErrNotObtained.Error() + ": " + e.ctxErr.Error() }
func (e *waitError) Unwrap() []error { return []error{ErrNotObtained, e.ctxErr} }
