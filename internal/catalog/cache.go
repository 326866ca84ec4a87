package catalog

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/seckill/seckill/internal/stock"
)

// Cache keeps SKUs in memory for ttl so the buy path reads a SKU's window,
// price and limit without a database round trip. Once a SKU is known, an
// entry past its ttl is still served while one background query refreshes
// it, so a slow or unreachable database never holds up a buyer; a failed
// refresh keeps the entry. Unknown ids are remembered too (briefly, and at
// most maxMisses of them) so a flood of made-up ids does not reach the
// database. Concurrent misses for one id share one query.
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

// refreshTimeout bounds a background refresh.
const refreshTimeout = 5 * time.Second

// Get returns the SKU from memory when known, else from the store. The SKU
// returned is shared: callers must not modify it.
func (c *Cache) Get(ctx context.Context, id uint64) (*SKU, error) {
	now := c.now()
	c.mu.RLock()
	it, ok := c.items[id]
	c.mu.RUnlock()
	fresh := ok && now.Sub(it.at) < c.ttl
	switch {
	case fresh && it.sku == nil:
		return nil, ErrNotFound
	case fresh:
		return it.sku, nil
	case ok && it.sku != nil:
		c.group.DoChan(key(id), func() (any, error) {
			ctx, cancel := context.WithTimeout(context.Background(), refreshTimeout)
			defer cancel()
			return c.load(ctx, id)
		})
		return it.sku, nil
	}
	v, err, _ := c.group.Do(key(id), func() (any, error) {
		return c.load(context.WithoutCancel(ctx), id)
	})
	if err != nil {
		return nil, err
	}
	return v.(*SKU), nil
}

// load reads id from the store and remembers the answer; a failure other
// than ErrNotFound leaves the cache as it was.
func (c *Cache) load(ctx context.Context, id uint64) (*SKU, error) {
	sku, err := c.store.Get(ctx, id)
	switch {
	case errors.Is(err, ErrNotFound):
		c.put(id, nil)
	case err == nil:
		c.put(id, sku)
	}
	return sku, err
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

// PartOf returns the part of SKU sku's stock order orderID was taken from,
// as the SKU's layout places it (a SKU of a drop keeps its stock under the
// drop's tag); for a SKU the catalog does not know, the part the order id
// names.
func (c *Cache) PartOf(ctx context.Context, sku uint64, orderID string) (stock.Part, error) {
	s, err := c.Get(ctx, sku)
	switch {
	case errors.Is(err, ErrNotFound):
		return stock.PartOf(sku, orderID), nil
	case err != nil:
		return stock.Part{}, err
	}
	return s.Layout().Of(orderID), nil
}
