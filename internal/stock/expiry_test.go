package stock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The keys a SKU's state is made of end together: a change that moves the
// state's expiry (a sale extended) moves theirs too. A returned set that
// ended before the stock hash would let a cancel repeated then give its
// order's units back twice, and a buyers hash that ended first would let
// past shoppers buy past the per-user limit.
func TestAChangeMovesTheExpiryOfEveryKeyOfTheState(t *testing.T) {
	const sku, split = 5, 6
	soon := time.Now().Add(2 * time.Hour)
	ctx, store := testStore(t, StoreOptions{}, map[uint64]Config{
		sku:   {Total: 10, Limit: 1, Expires: soon},
		split: {Total: 10, Limit: 1, Expires: soon, Buckets: 2},
	})
	b := &buyer{ctx: ctx, t: t, store: store, now: time.Now}
	a := b.buy(sku, "alice", "")
	require.NoError(t, a.Err)
	require.NoError(t, b.buy(sku, "bob", "").Err)
	_, err := store.Return(ctx, Part{SKU: sku}, a.OrderID, "alice", 1, ReturnClosed)
	require.NoError(t, err)
	moved, err := store.Move(ctx, Part{SKU: split}, Part{SKU: split, Bucket: 1}, 1)
	require.NoError(t, err)
	require.Positive(t, moved)

	later := time.Now().Add(96 * time.Hour)
	_, err = store.Configure(ctx, sku, Config{Total: 10, Limit: 1, Expires: later}, false)
	require.NoError(t, err)
	_, err = store.Configure(ctx, split, Config{Total: 10, Limit: 1, Expires: later, Buckets: 2}, false)
	require.NoError(t, err)
	k := newKeys(store.o.Prefix, Part{SKU: sku})
	k1 := newKeys(store.o.Prefix, Part{SKU: split, Bucket: 1})
	for _, keys := range [][]string{{k.stock, k.buyers, k.returned}, {k1.stock, k1.received}} {
		want := store.rdb.PExpireTime(ctx, keys[0]).Val()
		require.InDelta(t, later.UnixMilli(), want.Milliseconds(), 1)
		for _, key := range keys[1:] {
			require.Equal(t, int64(1), store.rdb.Exists(ctx, key).Val(), key)
			assert.Equal(t, want, store.rdb.PExpireTime(ctx, key).Val(), key)
		}
	}
}
