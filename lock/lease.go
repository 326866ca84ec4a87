package lock

import (
	"context"
	"errors"
	"sync"
	"time"
)

// renewer is implemented by every handle type: one owner-checked renewal.
type renewer interface {
	renew(ctx context.Context, ttl time.Duration) (bool, error)
}

// closedChan is the Done channel of handles that stopped holding before
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

// lease is the local state every handle shares: the expiry estimate, the
// lost-lock signal and the watchdog.
type lease struct {
	env  *env
	kind kind
	ttl  time.Duration
	h    renewer
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

// extend renews the lock for ttl from now through the handle's owner-checked
// script. It returns ErrInvalidTTL, ErrNotHeld (the lock is then marked
// lost) or the Redis error.
func (l *lease) extend(ctx context.Context, ttl time.Duration) error {
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

// heldBy turns a TTL answer into Held's: not held is false, not an error.
func heldBy(_ time.Duration, err error) (bool, error) {
	if errors.Is(err, ErrNotHeld) {
		return false, nil
	}
	return err == nil, err
}

func (l *lease) init(e *env, k kind, h renewer, ttl time.Duration, start time.Time, watchdog bool, maxRenewals int) {
	l.env, l.kind, l.h, l.ttl, l.expires = e, k, h, ttl, start.Add(ttl)
	if watchdog {
		l.stop = make(chan struct{})
		l.wdDone = make(chan struct{})
		l.watching = true
		if !e.goWatchdog(func() { l.watch(maxRenewals) }) {
			l.watching = false
			close(l.wdDone)
		}
	}
}

// Done returns a channel that is closed when the handle stops holding the
// lock: after a successful Unlock, or the moment the lock is known lost (a
// renewal or Extend found it gone or taken, renewals failed until the TTL
// passed, or — without a watchdog — the TTL passed). Err tells which.
func (l *lease) Done() <-chan struct{} {
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
func (l *lease) Err() error {
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
func (l *lease) Context(parent context.Context) (context.Context, context.CancelFunc) {
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

// Validity is how long the lock is still certainly held by the local clock:
// its TTL counted from before the last successful acquire or renewal was sent
// (for Redlock, minus the drift allowance). Zero when not held.
func (l *lease) Validity() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state != stateHeld {
		return 0
	}
	return max(0, l.expires.Sub(l.env.now()))
}

func (l *lease) held() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state == stateHeld
}

func (l *lease) expiresAt() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.expires
}

// renewed records a successful renewal that was sent at start.
func (l *lease) renewed(start time.Time, ttl time.Duration) {
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
func (l *lease) armLocked() {
	d := l.expires.Sub(l.env.now())
	if l.timer == nil {
		l.timer = time.AfterFunc(d, l.expired)
		return
	}
	l.timer.Reset(d)
}

func (l *lease) expired() {
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
func (l *lease) lost() { l.finish(stateLost) }

// released marks the lock released after a successful Unlock.
func (l *lease) released() { l.finish(stateReleased) }

func (l *lease) finish(state int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state != stateHeld {
		return
	}
	l.state = state
	if state == stateLost {
		// Counted before Done is closed, so whoever sees Done sees the count.
		l.env.metrics.lost(l.kind)
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

func (l *lease) signalStop() {
	if l.stop != nil {
		l.stopOnce.Do(func() { close(l.stop) })
	}
}

// stopWatchdog stops the watchdog and waits for it, so that no renewal runs
// after a release.
func (l *lease) stopWatchdog() {
	if l.stop == nil {
		return
	}
	l.signalStop()
	<-l.wdDone
}

// watch renews the lock every ttl/3 until stopped, the env closes, the cap is
// reached (then it waits for the expiry and reports the loss) or the lock is
// lost.
func (l *lease) watch(maxRenewals int) {
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
			l.env.metrics.renewal(l.kind, true)
			t.Reset(interval)
		case err == nil:
			l.env.metrics.renewal(l.kind, false)
			l.lost()
			return
		default:
			l.env.metrics.renewal(l.kind, false)
			left := l.expiresAt().Sub(l.env.now())
			if left <= 0 {
				l.lost()
				return
			}
			t.Reset(min(interval/2, left))
		}
	}
}
