package lock

import (
	"context"
	"time"
)

// TryLock makes one attempt to take the mutex called name for ttl: a single
// `SET key token NX PX ttl` (or, WithFencing, one script that also issues the
// fence). It returns ErrNotObtained when another holder has it,
// ErrInvalidName or ErrInvalidTTL for bad input, ErrClosed after Close, an
// error matching both ErrNotObtained and ctx.Err() when ctx is done, or the
// Redis error (after which a token-checked release is attempted, in case the
// SET landed and only its reply was lost).
func (c *Client) TryLock(ctx context.Context, name string, ttl time.Duration, opts ...Option) (*Lease, error) {
	return c.acquire(ctx, name, ttl, opts, false)
}

// Lock is TryLock that waits while the mutex is held: it retries with the
// backoff and at once when the holder's release is published. It returns
// ErrWaitTimeout when the WithWait bound passes, and an error matching both
// ErrNotObtained and ctx.Err() when ctx ends.
func (c *Client) Lock(ctx context.Context, name string, ttl time.Duration, opts ...Option) (*Lease, error) {
	return c.acquire(ctx, name, ttl, opts, true)
}

func (c *Client) acquire(ctx context.Context, name string, ttl time.Duration, opts []Option, wait bool) (*Lease, error) {
	if err := validate(name, ttl); err != nil {
		return nil, err
	}
	if c.env.closed() {
		return nil, ErrClosed
	}
	cfg := callOptions(c.backoff, opts)
	m := newMutex(c, c.prefix, name)
	start, err := c.tryThenWait(ctx, kindMutex, m.l.key, cfg, wait, func(ctx context.Context) (bool, error) {
		return m.tryOnce(ctx, ttl, cfg.fencing)
	})
	if err != nil {
		return nil, err
	}
	m.l.start(c.env, kindMutex, m, ttl, start, &cfg)
	return &m.l, nil
}

// mutex is the handle of a token mutex on one deployment. The Lease is
// embedded so one allocation serves both.
type mutex struct {
	l    Lease
	c    *Client
	keys keys
	// Built once per acquisition and reused by every command, so the hot
	// path does not convert them again.
	keyv []string // {mutex key}
	arg  any      // token
}

func newMutex(c *Client, prefix, name string) *mutex {
	m := &mutex{c: c, keys: newKeys(prefix, name)}
	m.l.key, m.l.token = m.keys.mutex(), newToken()
	m.keyv = []string{m.l.key}
	m.arg = m.l.token
	return m
}

// tryOnce is one acquisition attempt. A failure after the command may have
// reached Redis is followed by a best-effort token-checked release, so a lost
// reply does not leave the lock behind for a whole TTL.
func (m *mutex) tryOnce(ctx context.Context, ttl time.Duration, fencing bool) (bool, error) {
	rdb := m.c.rdb
	if !fencing {
		ok, err := rdb.SetNX(ctx, m.keyv[0], m.arg, ttl).Result()
		if err != nil {
			m.cleanup(ctx)
		}
		return ok, err
	}
	fence, err := lockFencedScript.Run(ctx, rdb, []string{m.keys.mutex(), m.keys.fence()},
		m.l.token, ttl.Milliseconds()).Int64()
	if err != nil {
		m.cleanup(ctx)
		return false, err
	}
	m.l.fence = fence
	return fence > 0, nil
}

func (m *mutex) cleanup(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 100*time.Millisecond)
	defer cancel()
	_ = unlockScript.Run(ctx, m.c.rdb, m.keyv, m.arg).Err()
}

func (m *mutex) release(ctx context.Context) (bool, error) {
	n, err := unlockScript.Run(ctx, m.c.rdb, m.keyv, m.arg).Int64()
	return n == 1, err
}

func (m *mutex) renew(ctx context.Context, ttl time.Duration) (bool, error) {
	n, err := extendScript.Run(ctx, m.c.rdb, m.keyv, m.arg, ttl.Milliseconds()).Int64()
	return n == 1, err
}

func (m *mutex) remaining(ctx context.Context) (time.Duration, error) {
	return remaining(pttlScript.Run(ctx, m.c.rdb, m.keyv, m.arg).Int64())
}
