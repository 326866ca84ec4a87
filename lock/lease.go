package lock

import (
	"context"
	"errors"
	"sync"
	"time"
)

// handle is what differs between the kinds of lock: its owner-checked
// scripts.
type handle interface {
	// release frees this holder's share; false when it was not held.
	release(ctx context.Context) (bool, error)
	// renew sets the share's TTL to ttl from now; false when not held.
	renew(ctx context.Context, ttl time.Duration) (bool, error)
	// remaining returns the share's TTL in Redis, or ErrNotHeld.
	remaining(ctx context.Context) (time.Duration, error)
}

// closedChan is the Done channel of leases that stopped holding before
// anyone asked for Done, saving an allocation per release.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

const (
	stateHeld = iota
	stateReleased
	stateLost
)

// Lease is one held acquisition of any lock of the package: a mutex, a
// reentrant hold, a read or write hold, a Redlock. It knows its expiry, can
// be extended, renewed by a watchdog, and released once; Done and Context
// report the moment it is known lost. It is safe for concurrent use.
type Lease struct {
	env   *env
	kind  kind
	ttl   time.Duration
	h     handle
	owner *Owner // tracks the lease for UnlockAll; nil when none
	key   string
	token string
	fence int64
	// slack is taken off every renewal's validity (Redlock's drift).
	slack time.Duration

	mu      sync.Mutex
	expires time.Time // conservative: measured from before the command was sent
	state   int
	done    chan struct{} // made on first Done, closed when not held
	timer   *time.Timer   // expiry alarm for Done without a watchdog

	watching bool // a watchdog goroutine runs (guarded by mu)
	stopOnce sync.Once
	stop     chan struct{} // nil without a watchdog
	wdDone   chan struct{}
}

// Key returns the Redis key of the lock: a string holding Token for a
// mutex, a hash for the reentrant and read-write locks. A caller's own
// script can check a mutex with `redis.call('GET', key) == token` when its
// keys carry the same hash tag as the lock's name.
func (l *Lease) Key() string { return l.key }

// Token returns the value that identifies this holder in Redis: a random
// 128-bit token, or for a reentrant hold the Owner's ID.
func (l *Lease) Token() string { return l.token }

// Fence returns the fencing token of a mutex taken WithFencing, else 0.
// Fences of one name only grow: a resource that remembers the highest fence
// it accepted can refuse a writer whose lock expired meanwhile.
func (l *Lease) Fence() int64 { return l.fence }

// Unlock releases the lease if Redis still holds it for this holder, in one
// script that also wakes waiters, stops the watchdog and closes Done. It
// returns ErrNotHeld when the lease was released already, or the lock
// expired or is held by someone else, in which case nothing in Redis is
// changed. On a Redis error the lease stays held, so Unlock can be retried.
// A reentrant hold releases one entry: the lock stays held while the Owner
// has others.
func (l *Lease) Unlock(ctx context.Context) error {
	if errors.Is(l.Err(), ErrReleased) {
		return ErrNotHeld
	}
	l.stopWatchdog()
	ok, err := l.h.release(ctx)
	if err != nil {
		return err
	}
	l.owner.untrack(l)
	if !ok {
		l.lost()
		return ErrNotHeld
	}
	l.released()
	return nil
}

// Extend sets the lease's TTL to ttl from now if Redis still holds it for
// this holder. It returns ErrInvalidTTL, ErrNotHeld (the lease is then
// marked lost) or the Redis error. A running watchdog keeps renewing with
// the TTL of the acquisition.
func (l *Lease) Extend(ctx context.Context, ttl time.Duration) error {
	if ttl < time.Millisecond {
		return ErrInvalidTTL
	}
	if !l.held() {
		return ErrNotHeld
	}
	start := l.env.now()
	ok, err := l.h.renew(ctx, ttl)
	if err != nil {
		return err
	}
	if !ok {
		l.lost()
		return ErrNotHeld
	}
	l.renewed(start, ttl)
	return nil
}

// TTL asks Redis for the lease's remaining time to live; it returns
// ErrNotHeld when Redis no longer holds the lock for this holder. For a
// Redlock it is the smallest TTL among a quorum of nodes, less the drift
// allowance.
func (l *Lease) TTL(ctx context.Context) (time.Duration, error) {
	return l.h.remaining(ctx)
}

// heldIn reports whether Redis still holds the lease: not held is false,
// not an error.
func (l *Lease) heldIn(ctx context.Context) (bool, error) {
	_, err := l.TTL(ctx)
	if errors.Is(err, ErrNotHeld) {
		return false, nil
	}
	return err == nil, err
}

// remaining turns the answer of a PTTL script into a TTL, or ErrNotHeld when
// the holder no longer holds the lock.
func remaining(ms int64, err error) (time.Duration, error) {
	if err != nil {
		return 0, err
	}
	if ms <= 0 {
		return 0, ErrNotHeld
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// start begins the lease of a lock acquired by a command sent at start, and
// its watchdog when cfg asks for one.
func (l *Lease) start(e *env, k kind, h handle, ttl time.Duration, start time.Time, cfg *options) {
	l.env, l.kind, l.h, l.ttl, l.expires = e, k, h, ttl, start.Add(ttl)
	if cfg.watchdog {
		maxRenewals := cfg.maxRenewals
		l.stop = make(chan struct{})
		l.wdDone = make(chan struct{})
		l.watching = true
		if !e.goWatchdog(func() { l.watch(maxRenewals) }) {
			l.watching = false
			close(l.wdDone)
		}
	}
}

// Done returns a channel that is closed when the lease stops holding the
// lock: after a successful Unlock, or the moment the lock is known lost (a
// renewal or Extend found it gone or taken, renewals failed until the TTL
// passed, or — without a watchdog — the TTL passed). Err tells which.
func (l *Lease) Done() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done == nil {
		l.done = make(chan struct{})
		if !l.watching {
			l.armLocked()
		}
	}
	return l.done
}

// Err returns nil while the lock is held, ErrReleased after Unlock, and
// ErrLockLost once the lock is known lost.
func (l *Lease) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch l.state {
	case stateReleased:
		return ErrReleased
	case stateLost:
		return ErrLockLost
	}
	return nil
}

// Context returns a context derived from parent that is cancelled, with
// Err() as its cause, when Done is closed. Call cancel when done with it.
func (l *Lease) Context(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	done := l.Done()
	go func() {
		select {
		case <-done:
			cancel(l.Err())
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}

// validity is how long the lock is still certainly held by the local clock:
// its TTL counted from before the last successful acquire or renewal was sent
// (for Redlock, minus the drift allowance). Zero when not held.
func (l *Lease) validity() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state != stateHeld {
		return 0
	}
	return max(0, l.expires.Sub(l.env.now()))
}

func (l *Lease) held() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state == stateHeld
}

func (l *Lease) expiresAt() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.expires
}

// renewed records a successful renewal that was sent at start.
func (l *Lease) renewed(start time.Time, ttl time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state != stateHeld {
		return
	}
	l.expires = start.Add(ttl - l.slack)
	if l.timer != nil {
		l.armLocked()
	}
}

// armLocked (re)sets the expiry alarm behind Done when no watchdog runs.
func (l *Lease) armLocked() {
	d := l.expires.Sub(l.env.now())
	if l.timer == nil {
		l.timer = time.AfterFunc(d, l.expired)
		return
	}
	l.timer.Reset(d)
}

func (l *Lease) expired() {
	l.mu.Lock()
	if l.state == stateHeld && l.env.now().Before(l.expires) {
		l.armLocked() // extended meanwhile
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	l.lost()
}

// lost marks the lock lost, closes Done and stops the watchdog.
func (l *Lease) lost() { l.finish(stateLost) }

// released marks the lock released after a successful Unlock.
func (l *Lease) released() { l.finish(stateReleased) }

func (l *Lease) finish(state int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state != stateHeld {
		return
	}
	l.state = state
	if state == stateLost {
		// Counted before Done is closed, so whoever sees Done sees the count.
		l.env.lostOne(l.kind)
	}
	if l.done == nil {
		l.done = closedChan
	} else {
		close(l.done)
	}
	if l.timer != nil {
		l.timer.Stop()
	}
	l.signalStop()
}

func (l *Lease) signalStop() {
	if l.stop != nil {
		l.stopOnce.Do(func() { close(l.stop) })
	}
}

// stopWatchdog stops the watchdog and waits for it, so that no renewal runs
// after a release.
func (l *Lease) stopWatchdog() {
	if l.stop == nil {
		return
	}
	l.signalStop()
	<-l.wdDone
}

// watch renews the lock every ttl/3 until stopped, the env closes, the cap is
// reached (then it waits for the expiry and reports the loss) or the lock is
// lost.
func (l *Lease) watch(maxRenewals int) {
	defer close(l.wdDone)
	defer func() {
		// Without the watchdog (Client closed), Done falls back to the
		// expiry alarm.
		l.mu.Lock()
		l.watching = false
		if l.state == stateHeld && l.done != nil {
			l.armLocked()
		}
		l.mu.Unlock()
	}()
	interval := l.ttl / 3
	t := time.NewTimer(interval)
	defer t.Stop()
	renewals := 0
	for {
		select {
		case <-l.stop:
			return
		case <-l.env.closing:
			return
		case <-t.C:
		}
		now := l.env.now()
		if maxRenewals > 0 && renewals >= maxRenewals {
			if d := l.expiresAt().Sub(now); d > 0 {
				t.Reset(d)
				continue
			}
			l.lost()
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), interval)
		ok, err := l.h.renew(ctx, l.ttl)
		cancel()
		switch {
		case err == nil && ok:
			renewals++
			l.renewed(now, l.ttl)
			l.env.renewal(l.kind, true)
			t.Reset(interval)
		case err == nil:
			l.env.renewal(l.kind, false)
			l.lost()
			return
		default:
			l.env.renewal(l.kind, false)
			left := l.expiresAt().Sub(l.env.now())
			if left <= 0 {
				l.lost()
				return
			}
			t.Reset(min(interval/2, left))
		}
	}
}
