package lock

import (
	"context"
	"errors"
	"time"
)

// Mutex is one held acquisition of a non-reentrant lock, from Client.TryLock,
// Client.Lock, Owner.TryLock, Owner.Lock or a Redlock. It is safe for
// concurrent use; it must not be copied.
type Mutex struct {
	lease
	c     *Client  // nil for Redlock
	rl    *Redlock // nil for a single deployment
	owner *Owner
	name  string
	keys  keys
	token string
	fence int64

	// Built once per acquisition and reused by every command, so the hot
	// path does not convert them again.
	keyv []string // {mutex key}
	arg  any      // token
}

// TryLock makes one attempt to take the mutex called name for ttl: a single
// `SET key token NX PX ttl` (or, WithFencing, one script that also issues the
// fence). It returns ErrNotObtained when another holder has it,
// ErrInvalidName or ErrInvalidTTL for bad input, ErrClosed after Close, an
// error matching both ErrNotObtained and ctx.Err() when ctx is done, or the
// Redis error (after which a token-checked release is attempted, in case the
// SET landed and only its reply was lost).
func (c *Client) TryLock(ctx context.Context, name string, ttl time.Duration, opts ...Option) (*Mutex, error) {
	return c.acquire(ctx, nil, name, ttl, opts, false)
}

// Lock is TryLock that waits while the mutex is held: it retries with the
// configured backoff and at once when the holder's release is published. It
// returns ErrWaitTimeout or ErrRetriesExhausted when its budget is used up,
// and an error matching both ErrNotObtained and ctx.Err() when ctx ends.
func (c *Client) Lock(ctx context.Context, name string, ttl time.Duration, opts ...Option) (*Mutex, error) {
	return c.acquire(ctx, nil, name, ttl, opts, true)
}

func (c *Client) acquire(ctx context.Context, o *Owner, name string, ttl time.Duration, opts []Option, wait bool) (*Mutex, error) {
	if err := validate(name, ttl); err != nil {
		return nil, err
	}
	if c.env.closed() {
		return nil, ErrClosed
	}
	cfg := newConfig(c.backoff, opts)
	m := newMutex(c.prefix, name)
	m.c, m.owner = c, o
	start, err := c.tryThenWait(ctx, kindMutex, m.keys.mutex(), cfg, wait, func(ctx context.Context) (bool, error) {
		return m.tryOnce(ctx, ttl, cfg.fencing)
	})
	if err != nil {
		return nil, err
	}
	m.lease.init(c.env, kindMutex, m, ttl, start, cfg.watchdog, cfg.maxRenewals)
	o.track(m)
	return m, nil
}

func newMutex(prefix, name string) *Mutex {
	m := &Mutex{name: name, keys: newKeys(prefix, name), token: newToken()}
	m.keyv = []string{m.keys.mutex()}
	m.arg = m.token
	return m
}

// tryOnce is one acquisition attempt. A failure after the command may have
// reached Redis is followed by a best-effort token-checked release, so a lost
// reply does not leave the lock behind for a whole TTL.
func (m *Mutex) tryOnce(ctx context.Context, ttl time.Duration, fencing bool) (bool, error) {
	rdb := m.c.rdb
	if !fencing {
		ok, err := rdb.SetNX(ctx, m.keyv[0], m.arg, ttl).Result()
		if err != nil {
			m.cleanup(ctx)
		}
		return ok, err
	}
	fence, err := lockFencedScript.Run(ctx, rdb, []string{m.keys.mutex(), m.keys.fence()},
		m.token, ttl.Milliseconds()).Int64()
	if err != nil {
		m.cleanup(ctx)
		return false, err
	}
	m.fence = fence
	return fence > 0, nil
}

func (m *Mutex) cleanup(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 100*time.Millisecond)
	defer cancel()
	_ = unlockScript.Run(ctx, m.c.rdb, m.keyv, m.arg).Err()
}

// Name returns the name the mutex was locked with.
func (m *Mutex) Name() string { return m.name }

// Key returns the Redis key of the mutex. A caller's own script can check
// ownership with `redis.call('GET', key) == token` when its keys carry the
// same hash tag as the name.
func (m *Mutex) Key() string { return m.keys.mutex() }

// Token returns the random value identifying this acquisition.
func (m *Mutex) Token() string { return m.token }

// Fence returns the fencing token of this acquisition (WithFencing), or 0.
// Fences of one name only grow: a resource that remembers the highest fence
// it accepted can refuse a writer whose lock expired meanwhile.
func (m *Mutex) Fence() int64 { return m.fence }

// Unlock releases the mutex if it still carries this acquisition's token
// (compare-and-delete in one script that also wakes waiters), stops the
// watchdog and closes Done. It returns ErrNotHeld when the handle was released
// already, or the lock expired or is held by someone else — in which case
// nothing in Redis is changed. On a Redis error the handle stays held, so
// Unlock can be retried.
func (m *Mutex) Unlock(ctx context.Context) error {
	if errors.Is(m.Err(), ErrReleased) {
		return ErrNotHeld
	}
	m.stopWatchdog()
	var ok bool
	var err error
	if m.rl != nil {
		ok, err = m.rl.release(ctx, m, m.ttl)
	} else {
		ok, err = m.release(ctx)
	}
	if err != nil {
		return err
	}
	m.owner.untrack(m)
	if !ok {
		m.lost()
		return ErrNotHeld
	}
	m.released()
	return nil
}

func (m *Mutex) release(ctx context.Context) (bool, error) {
	n, err := unlockScript.Run(ctx, m.c.rdb, m.keyv, m.arg).Int64()
	return n == 1, err
}

func (m *Mutex) unlock(ctx context.Context) error { return m.Unlock(ctx) }

// Extend sets the mutex's TTL to ttl from now if it is still held by this
// acquisition. It returns ErrInvalidTTL, ErrNotHeld (the lock is then marked
// lost) or the Redis error. A running watchdog keeps renewing with the TTL
// of the acquisition.
func (m *Mutex) Extend(ctx context.Context, ttl time.Duration) error {
	return m.lease.extend(ctx, ttl)
}

func (m *Mutex) renew(ctx context.Context, ttl time.Duration) (bool, error) {
	if m.rl != nil {
		return m.rl.extend(ctx, m, ttl)
	}
	n, err := extendScript.Run(ctx, m.c.rdb, m.keyv, m.arg, ttl.Milliseconds()).Int64()
	return n == 1, err
}

// TTL returns the remaining time to live of the mutex in Redis, or ErrNotHeld
// when it is not held by this acquisition. For Redlock it is the smallest TTL
// among a quorum of nodes, less the drift allowance.
func (m *Mutex) TTL(ctx context.Context) (time.Duration, error) {
	if m.rl != nil {
		return m.rl.ttl(ctx, m)
	}
	return remaining(pttlScript.Run(ctx, m.c.rdb, m.keyv, m.arg).Int64())
}

// Held reports whether Redis still holds the mutex for this acquisition.
func (m *Mutex) Held(ctx context.Context) (bool, error) {
	return heldBy(m.TTL(ctx))
}
