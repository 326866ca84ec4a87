package catalog

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// Cache keeps SKUs in memory for ttl so the buy path reads a SKU's window,
// price and limit without a database round trip. Unknown ids are remembered
// too (briefly, and at most maxMisses of them) so a flood of made-up ids
// does not reach the database. Concurrent misses for one id share one query.
type Cache struct {
	store *Store
	ttl   time.Duration
	now   func() time.Time

	mu     sync.RWMutex
	items  map[uint64]cached
	misses int
	group  singleflight.Group
}

type cached struct {
	sku *SKU // nil: the id is unknown
	at  time.Time
}

const maxMisses = 10_000

// NewCache returns a cache over store whose entries live for ttl.
func NewCache(store *Store, ttl time.Duration) *Cache {
	return &Cache{store: store, ttl: ttl, now: time.Now, items: map[uint64]cached{}}
}

// Get returns the SKU from memory when fresh, else from the store. The SKU
// returned is shared: callers must not modify it.
func (c *Cache) Get(ctx context.Context, id uint64) (*SKU, error) {
	now := c.now()
	c.mu.RLock()
	it, ok := c.items[id]
	c.mu.RUnlock()
	if ok && now.Sub(it.at) < c.ttl {
		if it.sku == nil {
			return nil, ErrNotFound
		}
		return it.sku, nil
	}
	v, err, _ := c.group.Do(key(id), func() (any, error) {
		sku, err := c.store.Get(context.WithoutCancel(ctx), id)
		switch {
		case errors.Is(err, ErrNotFound):
			c.put(id, nil)
		case err == nil:
			c.put(id, sku)
		}
		return sku, err
	})
	if err != nil {
		return nil, err
	}
	return v.(*SKU), nil
}

// Forget drops id so the next Get reads the store.
func (c *Cache) Forget(id uint64) {
	c.mu.Lock()
	if it, ok := c.items[id]; ok {
		if it.sku == nil {
			c.misses--
		}
		delete(c.items, id)
	}
	c.mu.Unlock()
}

func (c *Cache) put(id uint64, sku *SKU) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old, had := c.items[id]
	if had && old.sku == nil {
		c.misses--
	}
	if sku == nil {
		if c.misses >= maxMisses {
			delete(c.items, id)
			return
		}
		c.misses++
	}
	c.items[id] = cached{sku: sku, at: c.now()}
}

func key(id uint64) string { return strconv.FormatUint(id, 10) }
