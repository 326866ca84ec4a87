package lock

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Owner is a holder of reentrant locks — a session, a job, a request —
// identified by an ID the caller gives, never by a goroutine. A reentrant
// lock is a Redis hash (owner ID → hold count): its Owner may take it again
// while holding it, each entry re-arms the TTL, and it is free once every
// hold is released. Each hold is a Lease of its own, released once. An Owner
// is safe for concurrent use, but goroutines sharing one share its holds.
type Owner struct {
	c  *Client
	id string

	mu   sync.Mutex
	held map[*Lease]struct{}
}

// Owner returns the holder of reentrant locks with the given id, or with a
// random one when id is empty. Two Owners with the same id are the same
// holder in Redis.
func (c *Client) Owner(id string) *Owner {
	if id == "" {
		id = newToken()
	}
	return &Owner{c: c, id: id, held: make(map[*Lease]struct{})}
}

// TryLock takes the reentrant lock called name for the Owner, or enters it
// again when the Owner holds it already, in one script. It returns
// ErrNotObtained when another owner holds it, ErrInvalidName, ErrInvalidTTL,
// ErrClosed, or the Redis error. WithFencing has no effect.
func (o *Owner) TryLock(ctx context.Context, name string, ttl time.Duration, opts ...Option) (*Lease, error) {
	return o.acquire(ctx, name, ttl, opts, false)
}

// Lock is TryLock that waits like Client.Lock while another owner holds the
// lock, with the same errors.
func (o *Owner) Lock(ctx context.Context, name string, ttl time.Duration, opts ...Option) (*Lease, error) {
	return o.acquire(ctx, name, ttl, opts, true)
}

// UnlockAll releases every hold the Owner still has. It returns nil when all
// were released, or the joined errors: errors.Is(err, ErrNotHeld) when some
// had expired or been taken meanwhile. Holds that failed with a Redis error
// stay, so UnlockAll can be called again.
func (o *Owner) UnlockAll(ctx context.Context) error {
	o.mu.Lock()
	ls := make([]*Lease, 0, len(o.held))
	for l := range o.held {
		ls = append(ls, l)
	}
	o.mu.Unlock()
	var errs []error
	for _, l := range ls {
		if err := l.Unlock(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// len returns the number of holds the Owner tracks.
func (o *Owner) len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.held)
}

func (o *Owner) track(l *Lease) {
	o.mu.Lock()
	o.held[l] = struct{}{}
	o.mu.Unlock()
}

func (o *Owner) untrack(l *Lease) {
	if o == nil {
		return
	}
	o.mu.Lock()
	delete(o.held, l)
	o.mu.Unlock()
}

func (o *Owner) acquire(ctx context.Context, name string, ttl time.Duration, opts []Option, wait bool) (*Lease, error) {
	if err := validate(name, ttl); err != nil {
		return nil, err
	}
	c := o.c
	if c.env.closed() {
		return nil, ErrClosed
	}
	cfg := callOptions(c.backoff, opts)
	r := &reentrant{o: o, keyv: []string{newKeys(c.prefix, name).reentrant()}}
	r.l.key, r.l.token, r.l.owner = r.keyv[0], o.id, o
	start, err := c.tryThenWait(ctx, kindReentrant, r.l.key, cfg, wait, r.tryOnce(ttl))
	if err != nil {
		return nil, err
	}
	r.l.start(c.env, kindReentrant, r, ttl, start, &cfg)
	o.track(&r.l)
	return &r.l, nil
}

// reentrant is the handle of one hold of a reentrant lock.
type reentrant struct {
	l    Lease
	o    *Owner
	keyv []string
	left atomic.Int64 // holds the owner still had after Unlock (tests)
}

func (r *reentrant) tryOnce(ttl time.Duration) attempt {
	return func(ctx context.Context) (bool, error) {
		n, err := reentrantLockScript.Run(ctx, r.o.c.rdb, r.keyv, r.o.id, ttl.Milliseconds()).Int64()
		return n > 0, err
	}
}

func (r *reentrant) release(ctx context.Context) (bool, error) {
	n, err := reentrantUnlockScript.Run(ctx, r.o.c.rdb, r.keyv, r.o.id, r.l.ttl.Milliseconds()).Int64()
	r.left.Store(max(n, 0))
	return n >= 0, err
}

func (r *reentrant) renew(ctx context.Context, ttl time.Duration) (bool, error) {
	n, err := reentrantExtendScript.Run(ctx, r.o.c.rdb, r.keyv, r.o.id, ttl.Milliseconds()).Int64()
	return n == 1, err
}

func (r *reentrant) remaining(ctx context.Context) (time.Duration, error) {
	return remaining(reentrantPTTLScript.Run(ctx, r.o.c.rdb, r.keyv, r.o.id).Int64())
}
