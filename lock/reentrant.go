package lock

import (
	"context"
	"errors"
	"time"
)

// Reentrant is one hold of a reentrant lock by an Owner. The lock is a Redis
// hash (owner ID → hold count): the owner may take it again while holding it,
// each entry re-arms the TTL, and it is free once every hold is released.
// Each hold is its own handle and is released once, so a hold can never be
// released twice. Safe for concurrent use.
type Reentrant struct {
	lease
	o    *Owner
	name string
	keys keys
}

// TryLockReentrant takes the reentrant lock called name for the Owner, or
// enters it again when the Owner holds it already, in one script. It returns
// ErrNotObtained when another owner holds it, ErrInvalidName, ErrInvalidTTL,
// ErrClosed, or the Redis error.
func (o *Owner) TryLockReentrant(ctx context.Context, name string, ttl time.Duration, opts ...Option) (*Reentrant, error) {
	return o.reentrant(ctx, name, ttl, opts, false)
}

// LockReentrant is TryLockReentrant that waits like Client.Lock while another
// owner holds the lock, with the same errors.
func (o *Owner) LockReentrant(ctx context.Context, name string, ttl time.Duration, opts ...Option) (*Reentrant, error) {
	return o.reentrant(ctx, name, ttl, opts, true)
}

func (o *Owner) reentrant(ctx context.Context, name string, ttl time.Duration, opts []Option, wait bool) (*Reentrant, error) {
	if err := validate(name, ttl); err != nil {
		return nil, err
	}
	c := o.c
	if c.env.closed() {
		return nil, ErrClosed
	}
	cfg := newConfig(c.backoff, opts)
	r := &Reentrant{o: o, name: name, keys: newKeys(c.prefix, name)}
	start, err := c.tryThenWait(ctx, kindReentrant, r.keys.reentrant(), cfg, wait, func(ctx context.Context) (bool, error) {
		return r.tryOnce(ctx, ttl)
	})
	if err != nil {
		return nil, err
	}
	r.lease.init(c.env, kindReentrant, r, ttl, start, cfg.watchdog, cfg.maxRenewals)
	o.track(r)
	return r, nil
}

func (r *Reentrant) tryOnce(ctx context.Context, ttl time.Duration) (bool, error) {
	n, err := reentrantLockScript.Run(ctx, r.o.c.rdb, []string{r.keys.reentrant()}, r.o.id, ttl.Milliseconds()).Int64()
	return n > 0, err
}

// Name returns the lock's name.
func (r *Reentrant) Name() string { return r.name }

// Key returns the Redis key (a hash) of the reentrant lock.
func (r *Reentrant) Key() string { return r.keys.reentrant() }

// Owner returns the owner of this hold.
func (r *Reentrant) Owner() *Owner { return r.o }

// Unlock releases this hold. It returns how many holds the owner still has:
// more than 0 means the lock is still held (its TTL re-armed), 0 means it was
// released and waiters were woken. It returns ErrNotHeld when this hold was
// released already, or the owner no longer holds the lock (it expired or
// another owner has it); nothing in Redis is changed then.
func (r *Reentrant) Unlock(ctx context.Context) (int64, error) {
	if errors.Is(r.Err(), ErrReleased) {
		return 0, ErrNotHeld
	}
	r.stopWatchdog()
	n, err := reentrantUnlockScript.Run(ctx, r.o.c.rdb, []string{r.keys.reentrant()},
		r.o.id, r.ttl.Milliseconds()).Int64()
	if err != nil {
		return 0, err
	}
	r.o.untrack(r)
	if n < 0 {
		r.lost()
		return 0, ErrNotHeld
	}
	r.released()
	return n, nil
}

func (r *Reentrant) unlock(ctx context.Context) error {
	_, err := r.Unlock(ctx)
	return err
}

// Extend sets the lock's TTL to ttl from now while the owner holds it; it
// returns ErrInvalidTTL, ErrNotHeld or the Redis error.
func (r *Reentrant) Extend(ctx context.Context, ttl time.Duration) error {
	return r.lease.extend(ctx, ttl)
}

func (r *Reentrant) renew(ctx context.Context, ttl time.Duration) (bool, error) {
	n, err := reentrantExtendScript.Run(ctx, r.o.c.rdb, []string{r.keys.reentrant()}, r.o.id, ttl.Milliseconds()).Int64()
	return n == 1, err
}

// TTL returns the lock's remaining TTL, or ErrNotHeld when the owner does not
// hold it.
func (r *Reentrant) TTL(ctx context.Context) (time.Duration, error) {
	return remaining(reentrantPTTLScript.Run(ctx, r.o.c.rdb, []string{r.keys.reentrant()}, r.o.id).Int64())
}

// Held reports whether Redis still holds the lock for the owner.
func (r *Reentrant) Held(ctx context.Context) (bool, error) {
	return heldBy(r.TTL(ctx))
}
