package lock

import (
	"context"
	"errors"
	"sync"
	"time"
)

// unlocker is any handle an Owner tracks.
type unlocker interface {
	unlock(ctx context.Context) error
}

// Owner is an explicit lock holder identity — a session, a job, a request —
// that remembers what it holds, so that everything can be released at once
// (UnlockAll), and that owns reentrant locks: reentrancy is keyed by the
// Owner's ID, never by a goroutine. An Owner is safe for concurrent use, but
// goroutines sharing one Owner share its reentrant holds.
type Owner struct {
	c  *Client
	id string

	mu   sync.Mutex
	held map[unlocker]struct{}
}

// NewOwner returns an Owner with the given id, or a random one when id is
// empty. Two Owners with the same id are the same holder of reentrant locks.
func (c *Client) NewOwner(id string) *Owner {
	if id == "" {
		id = newToken()
	}
	return &Owner{c: c, id: id, held: make(map[unlocker]struct{})}
}

// ID returns the owner's identity, the hash field of its reentrant locks.
func (o *Owner) ID() string { return o.id }

// TryLock is Client.TryLock; the Owner tracks the returned Mutex until it is
// unlocked.
func (o *Owner) TryLock(ctx context.Context, name string, ttl time.Duration, opts ...Option) (*Mutex, error) {
	return o.c.acquire(ctx, o, name, ttl, opts, false)
}

// Lock is Client.Lock; the Owner tracks the returned Mutex until it is
// unlocked.
func (o *Owner) Lock(ctx context.Context, name string, ttl time.Duration, opts ...Option) (*Mutex, error) {
	return o.c.acquire(ctx, o, name, ttl, opts, true)
}

// UnlockAll releases every lock the Owner still tracks (mutexes, reentrant
// holds, read-write holds). It returns nil when all were released, or the
// joined errors: errors.Is(err, ErrNotHeld) when some had expired or been
// taken meanwhile. Handles that failed with a Redis error stay tracked, so
// UnlockAll can be called again.
func (o *Owner) UnlockAll(ctx context.Context) error {
	o.mu.Lock()
	hs := make([]unlocker, 0, len(o.held))
	for h := range o.held {
		hs = append(hs, h)
	}
	o.mu.Unlock()
	var errs []error
	for _, h := range hs {
		if err := h.unlock(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Len returns the number of locks the Owner tracks.
func (o *Owner) Len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.held)
}

func (o *Owner) track(h unlocker) {
	if o == nil {
		return
	}
	o.mu.Lock()
	o.held[h] = struct{}{}
	o.mu.Unlock()
}

func (o *Owner) untrack(h unlocker) {
	if o == nil {
		return
	}
	o.mu.Lock()
	delete(o.held, h)
	o.mu.Unlock()
}
