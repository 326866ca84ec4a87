package stock

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Units moving between the buckets of a SKU on the Cluster (no buys, so
// the SKU has all 30 of its units at every instant) are counted once by
// Left: never twice (read in the lender before the move and in the
// receiver after it), never left out (read in neither).
func TestLeftCountsAUnitMovingBetweenBucketsOnce(t *testing.T) {
	b := newBucketSale(t, StrategyAtomic, 30, 1, 3)
	var stop atomic.Bool
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			from, to := Part{SKU: b.sku, Bucket: i}, Part{SKU: b.sku, Bucket: (i + 1) % 3}
			for !stop.Load() {
				_, err := b.store.Move(b.ctx, from, to, 3)
				assert.NoError(t, err)
			}
		})
	}
	seen := map[int64]int{}
	for range 400 {
		left, ok, err := b.store.Left(b.ctx, Layout{SKU: b.sku, Buckets: b.buckets})
		require.NoError(t, err)
		require.True(t, ok)
		seen[left]++
	}
	stop.Store(true)
	wg.Wait()
	assert.Equal(t, map[int64]int{30: 400}, seen, "units left read, and how often")
}

// A rebuild writes the buckets one after the other, bucket 0 last. A
// bucket it wrote has forgotten the units it received from another, while
// that lender, not yet written, still counts them as lent: read together,
// they look like units on their way. Left does not count them then, and
// never reads more units than the SKU had.
func TestLeftDoesNotCountUnitsARebuildHasNotReachedYet(t *testing.T) {
	b := newBucketSale(t, StrategyAtomic, 30, 100, 3) // 10 units per bucket
	parts := Parts(b.sku, b.buckets)
	n, err := b.store.Move(b.ctx, parts[1], parts[2], 4)
	require.NoError(t, err)
	require.Positive(t, n)
	buyer := b.userIn(2, "big")
	_, err = b.buy(0, buyer, int(10+n))
	require.NoError(t, err, "bucket 2's own units and those it received")
	before, ok, err := b.store.Left(b.ctx, Layout{SKU: b.sku, Buckets: b.buckets})
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, 20-n, before)

	token, err := b.store.Pause(b.ctx, parts, time.Minute)
	require.NoError(t, err)
	r := Rebuilt{Config: Config{Total: 30, Limit: 100, Buckets: 3, Expires: time.Now().Add(time.Hour)},
		Buyers: map[string]int64{buyer: 10 + n}}
	r.Total = 10 + n
	require.NoError(t, b.store.Rebuild(b.ctx, parts[2], token, r))
	mid, ok, err := b.store.Left(b.ctx, Layout{SKU: b.sku, Buckets: b.buckets})
	require.NoError(t, err)
	require.True(t, ok)
	assert.LessOrEqual(t, mid, before, "a bucket rebuilt, the others not yet")
}
