package lock

import (
	"context"
	"time"
)

// RWMutex is a named read-write lock on one Redis hash (one Cluster slot):
// any number of readers or one writer, each holder with its own token and
// expiry, so a dead holder frees its share by itself and only a holder can
// release its own share. A writer that waits (Lock) leaves a short-lived
// waiting-writer marker that stops new readers, so a steady stream of
// readers cannot starve it. Writes are not reentrant. RWMutex itself holds
// nothing; each acquisition returns a Lease.
type RWMutex struct {
	c    *Client
	name string
	keyv []string
}

// RWMutex returns the read-write lock called name. It does no I/O.
func (c *Client) RWMutex(name string) *RWMutex {
	return &RWMutex{c: c, name: name, keyv: []string{newKeys(c.prefix, name).rw()}}
}

// TryRLock takes a read hold when no writer holds the lock and no writer is
// waiting. It returns ErrNotObtained otherwise, ErrInvalidName,
// ErrInvalidTTL, ErrClosed, or the Redis error.
func (rw *RWMutex) TryRLock(ctx context.Context, ttl time.Duration, opts ...Option) (*Lease, error) {
	return rw.acquire(ctx, false, ttl, opts, false)
}

// RLock is TryRLock that waits like Client.Lock, with the same errors.
func (rw *RWMutex) RLock(ctx context.Context, ttl time.Duration, opts ...Option) (*Lease, error) {
	return rw.acquire(ctx, false, ttl, opts, true)
}

// TryLock takes the write hold when there is no live reader or writer. It
// returns ErrNotObtained otherwise, ErrInvalidName, ErrInvalidTTL, ErrClosed,
// or the Redis error.
func (rw *RWMutex) TryLock(ctx context.Context, ttl time.Duration, opts ...Option) (*Lease, error) {
	return rw.acquire(ctx, true, ttl, opts, false)
}

// Lock is TryLock that waits like Client.Lock, with the same errors. While it
// waits, new readers are turned away; when it gives up it removes its marker.
func (rw *RWMutex) Lock(ctx context.Context, ttl time.Duration, opts ...Option) (*Lease, error) {
	return rw.acquire(ctx, true, ttl, opts, true)
}

func (rw *RWMutex) acquire(ctx context.Context, write bool, ttl time.Duration, opts []Option, wait bool) (*Lease, error) {
	if err := validate(rw.name, ttl); err != nil {
		return nil, err
	}
	c := rw.c
	if c.env.closed() {
		return nil, ErrClosed
	}
	cfg := callOptions(c.backoff, opts)
	h := &rwHold{rw: rw, write: write}
	h.l.key, h.l.token = rw.keyv[0], newToken()
	k := kindRead
	h.field = "r:" + h.l.token
	if write {
		k = kindWrite
		h.field = "w:" + h.l.token
	}
	var marker time.Duration
	if write && wait {
		marker = max(4*cfg.backoff.max, 500*time.Millisecond)
	}
	start, err := c.tryThenWait(ctx, k, h.l.key, cfg, wait, func(ctx context.Context) (bool, error) {
		return h.tryOnce(ctx, ttl, marker)
	})
	if err != nil && marker > 0 {
		// A writer that gave up takes back its claim to go next.
		h.dropMarker(ctx)
	}
	if err != nil {
		return nil, err
	}
	h.l.start(c.env, k, h, ttl, start, &cfg)
	return &h.l, nil
}

// rwHold is the handle of one read or write hold of an RWMutex.
type rwHold struct {
	l     Lease
	rw    *RWMutex
	write bool
	field string // "r:<token>" or "w:<token>"
}

func (h *rwHold) tryOnce(ctx context.Context, ttl, marker time.Duration) (bool, error) {
	rdb, key := h.rw.c.rdb, h.rw.keyv
	var n int64
	var err error
	if h.write {
		n, err = rwWLockScript.Run(ctx, rdb, key, h.l.token, ttl.Milliseconds(), marker.Milliseconds()).Int64()
	} else {
		n, err = rwRLockScript.Run(ctx, rdb, key, h.l.token, ttl.Milliseconds()).Int64()
	}
	return n == 1, err
}

// dropMarker removes a giving-up writer's marker, and the write hold in case
// the last attempt's reply was lost, so readers are not blocked for nothing.
func (h *rwHold) dropMarker(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 100*time.Millisecond)
	defer cancel()
	for _, f := range []string{"p:" + h.l.token, h.field} {
		_ = rwUnlockScript.Run(ctx, h.rw.c.rdb, h.rw.keyv, f).Err()
	}
}

func (h *rwHold) release(ctx context.Context) (bool, error) {
	n, err := rwUnlockScript.Run(ctx, h.rw.c.rdb, h.rw.keyv, h.field).Int64()
	return n == 1, err
}

func (h *rwHold) renew(ctx context.Context, ttl time.Duration) (bool, error) {
	n, err := rwExtendScript.Run(ctx, h.rw.c.rdb, h.rw.keyv, h.field, ttl.Milliseconds()).Int64()
	return n == 1, err
}

func (h *rwHold) remaining(ctx context.Context) (time.Duration, error) {
	return remaining(rwPTTLScript.Run(ctx, h.rw.c.rdb, h.rw.keyv, h.field).Int64())
}
