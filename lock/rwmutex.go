package lock

import (
	"context"
	"errors"
	"time"
)

// RWMutex is a named read-write lock on one Redis hash (one Cluster slot):
// any number of readers or one writer, each holder with its own token and
// expiry, so a dead holder frees its share by itself and only a holder can
// release its own share. A writer that waits (Lock) leaves a short-lived
// waiting-writer marker that stops new readers, so a steady stream of readers
// cannot starve it. Writes are not reentrant. RWMutex itself holds nothing;
// its methods return one RWHold per acquisition.
type RWMutex struct {
	c    *Client
	o    *Owner
	name string
	keys keys
}

// RWMutex returns the read-write lock called name. It does no I/O.
func (c *Client) RWMutex(name string) *RWMutex {
	return &RWMutex{c: c, name: name, keys: newKeys(c.prefix, name)}
}

// RWMutex is Client.RWMutex whose holds the Owner tracks for UnlockAll.
func (o *Owner) RWMutex(name string) *RWMutex {
	rw := o.c.RWMutex(name)
	rw.o = o
	return rw
}

// Key returns the Redis key (a hash) of the read-write lock.
func (rw *RWMutex) Key() string { return rw.keys.rw() }

// RWHold is one held share of an RWMutex: a read hold or the write hold.
type RWHold struct {
	lease
	rw    *RWMutex
	write bool
	field string // "r:<token>" or "w:<token>"
	token string
}

// TryRLock takes a read hold when no writer holds the lock and no writer is
// waiting. It returns ErrNotObtained otherwise, ErrInvalidName,
// ErrInvalidTTL, ErrClosed, or the Redis error.
func (rw *RWMutex) TryRLock(ctx context.Context, ttl time.Duration, opts ...Option) (*RWHold, error) {
	return rw.acquire(ctx, false, ttl, opts, false)
}

// RLock is TryRLock that waits like Client.Lock, with the same errors.
func (rw *RWMutex) RLock(ctx context.Context, ttl time.Duration, opts ...Option) (*RWHold, error) {
	return rw.acquire(ctx, false, ttl, opts, true)
}

// TryLock takes the write hold when there is no live reader or writer. It
// returns ErrNotObtained otherwise, ErrInvalidName, ErrInvalidTTL, ErrClosed,
// or the Redis error.
func (rw *RWMutex) TryLock(ctx context.Context, ttl time.Duration, opts ...Option) (*RWHold, error) {
	return rw.acquire(ctx, true, ttl, opts, false)
}

// Lock is TryLock that waits like Client.Lock, with the same errors. While it
// waits, new readers are turned away; when it gives up it removes its marker.
func (rw *RWMutex) Lock(ctx context.Context, ttl time.Duration, opts ...Option) (*RWHold, error) {
	return rw.acquire(ctx, true, ttl, opts, true)
}

func (rw *RWMutex) acquire(ctx context.Context, write bool, ttl time.Duration, opts []Option, wait bool) (*RWHold, error) {
	if err := validate(rw.name, ttl); err != nil {
		return nil, err
	}
	c := rw.c
	if c.env.closed() {
		return nil, ErrClosed
	}
	cfg := newConfig(c.backoff, opts)
	h := &RWHold{rw: rw, write: write, token: newToken()}
	k := kindRead
	h.field = "r:" + h.token
	if write {
		k = kindWrite
		h.field = "w:" + h.token
	}
	var marker time.Duration
	if write && wait {
		marker = max(4*cfg.backoff.Max, 500*time.Millisecond)
	}
	start, err := c.tryThenWait(ctx, k, rw.keys.rw(), cfg, wait, func(ctx context.Context) (bool, error) {
		return h.tryOnce(ctx, ttl, marker)
	})
	if err != nil && marker > 0 {
		// A writer that gave up takes back its claim to go next.
		h.dropMarker(ctx)
	}
	if err != nil {
		return nil, err
	}
	h.lease.init(c.env, k, h, ttl, start, cfg.watchdog, cfg.maxRenewals)
	rw.o.track(h)
	return h, nil
}

func (h *RWHold) tryOnce(ctx context.Context, ttl, marker time.Duration) (bool, error) {
	rdb, key := h.rw.c.rdb, []string{h.rw.keys.rw()}
	var n int64
	var err error
	if h.write {
		n, err = rwWLockScript.Run(ctx, rdb, key, h.token, ttl.Milliseconds(), marker.Milliseconds()).Int64()
	} else {
		n, err = rwRLockScript.Run(ctx, rdb, key, h.token, ttl.Milliseconds()).Int64()
	}
	return n == 1, err
}

// dropMarker removes a giving-up writer's marker, and the write hold in case
// the last attempt's reply was lost, so readers are not blocked for nothing.
func (h *RWHold) dropMarker(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 100*time.Millisecond)
	defer cancel()
	for _, f := range []string{"p:" + h.token, h.field} {
		_ = rwUnlockScript.Run(ctx, h.rw.c.rdb, []string{h.rw.keys.rw()}, f).Err()
	}
}

// Write reports whether this is the write hold.
func (h *RWHold) Write() bool { return h.write }

// Token returns the random value identifying this hold.
func (h *RWHold) Token() string { return h.token }

// Unlock releases this hold and wakes waiters. It returns ErrNotHeld when the
// hold was released already or has expired (nothing is changed then), or the
// Redis error (the hold then stays, so Unlock can be retried).
func (h *RWHold) Unlock(ctx context.Context) error {
	if errors.Is(h.Err(), ErrReleased) {
		return ErrNotHeld
	}
	h.stopWatchdog()
	n, err := rwUnlockScript.Run(ctx, h.rw.c.rdb, []string{h.rw.keys.rw()}, h.field).Int64()
	if err != nil {
		return err
	}
	h.rw.o.untrack(h)
	if n != 1 {
		h.lost()
		return ErrNotHeld
	}
	h.released()
	return nil
}

func (h *RWHold) unlock(ctx context.Context) error { return h.Unlock(ctx) }

// Extend gives this hold a new expiry ttl from now; it returns
// ErrInvalidTTL, ErrNotHeld or the Redis error.
func (h *RWHold) Extend(ctx context.Context, ttl time.Duration) error {
	return h.lease.extend(ctx, ttl)
}

func (h *RWHold) renew(ctx context.Context, ttl time.Duration) (bool, error) {
	n, err := rwExtendScript.Run(ctx, h.rw.c.rdb, []string{h.rw.keys.rw()}, h.field, ttl.Milliseconds()).Int64()
	return n == 1, err
}

// TTL returns the remaining time of this hold, or ErrNotHeld.
func (h *RWHold) TTL(ctx context.Context) (time.Duration, error) {
	return remaining(rwPTTLScript.Run(ctx, h.rw.c.rdb, []string{h.rw.keys.rw()}, h.field).Int64())
}

// Held reports whether Redis still has this hold.
func (h *RWHold) Held(ctx context.Context) (bool, error) {
	return heldBy(h.TTL(ctx))
}
