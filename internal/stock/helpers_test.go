package stock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/testsvc"
)

// testStore returns a Store with options o on the test Redis, under a key
// prefix of its own, with each SKU of skus configured.
func testStore(t testing.TB, o StoreOptions, skus map[uint64]Config) (context.Context, *Store) {
	t.Helper()
	rdb, prefix := testsvc.Redis(t)
	o.Prefix = prefix
	store := NewStore(rdb, o)
	ctx := t.Context()
	for sku, cfg := range skus {
		_, err := store.Configure(ctx, sku, cfg, true)
		require.NoError(t, err)
	}
	return ctx, store
}

// buyer buys one unit at a time, each as a new order created at now().
type buyer struct {
	ctx   context.Context
	t     *testing.T
	store *Store
	now   func() time.Time
}

// buy buys one unit of sku for user with request id rid ("" for none) and
// returns the answer; an error from Redis fails the test.
func (b *buyer) buy(sku uint64, user, rid string) Result {
	b.t.Helper()
	_, res, err := b.store.Buy(b.ctx, Part{SKU: sku}, []Request{{User: user, Qty: 1, RequestID: rid, Created: b.now()}}, Guard{})
	require.NoError(b.t, err)
	return res[0]
}
