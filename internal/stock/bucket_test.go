package stock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/lock"
)

// bucketSale is a SKU split into buckets on the 3-master Cluster, with two
// sellers standing for two instances.
type bucketSale struct {
	ctx     context.Context
	store   *Store
	sellers []*Seller
	sku     uint64
	buckets int
}

func newBucketSale(t *testing.T, strategy string, total int64, limit, buckets int) *bucketSale {
	t.Helper()
	rdb, prefix := testsvc.Cluster(t)
	ctx := t.Context()
	store := NewStore(rdb, StoreOptions{Prefix: prefix})
	b := &bucketSale{ctx: ctx, store: store, sku: 77, buckets: buckets}
	_, err := store.Configure(ctx, b.sku, Config{Total: total, Limit: limit, Buckets: buckets, Expires: time.Now().Add(time.Hour)}, true)
	require.NoError(t, err)
	for range 2 {
		locks := lock.New(rdb, lock.WithPrefix(prefix+"lock:"))
		t.Cleanup(func() { _ = locks.Close() })
		s := NewSeller(ctx, rdb, store, locks, SellerOptions{Strategy: strategy, LockWait: 2 * time.Second})
		t.Cleanup(s.Close)
		b.sellers = append(b.sellers, s)
	}
	return b
}

// buy buys qty units as user through seller i.
func (b *bucketSale) buy(i int, user string, qty int) (Result, error) {
	return b.sellers[i%len(b.sellers)].Buy(b.ctx, Layout{SKU: b.sku, Buckets: b.buckets}, Request{User: user, Qty: qty, Created: time.Now()})
}

// state adds up the buckets' state and the orders queued in each.
func (b *bucketSale) state(t *testing.T) (State, int64) {
	t.Helper()
	st, ok, err := b.store.Sum(b.ctx, Layout{SKU: b.sku, Buckets: b.buckets})
	require.NoError(t, err)
	require.True(t, ok)
	var queued int64
	for _, p := range Parts(b.sku, b.buckets) {
		orders, _, err := b.store.QueuedOrders(b.ctx, p)
		require.NoError(t, err)
		for _, o := range orders {
			queued += int64(o.Qty)
			assert.Equal(t, p, PartOf(b.sku, o.OrderID), "an order is queued in the bucket its id names")
			assert.Equal(t, Home(b.sku, b.buckets, o.User), p, "and bought from its shopper's home bucket")
		}
	}
	return st, queued
}

// A crowd larger than the stock, spread over the buckets and two sellers,
// buys exactly the stock: never more, and no unit is stranded in a bucket
// while a shopper of another is told sold out.
func TestBucketsSellExactlyTheStock(t *testing.T) {
	for _, strategy := range []string{StrategyLock, StrategyAtomic} {
		for _, buckets := range []int{3, 6} {
			t.Run(fmt.Sprintf("%s/%d", strategy, buckets), func(t *testing.T) {
				const stock, shoppers = 50, 400
				b := newBucketSale(t, strategy, stock, 1, buckets)
				var sold, soldOut atomic.Int64
				var wg sync.WaitGroup
				for i := range shoppers {
					wg.Go(func() {
						res, err := b.buy(i, fmt.Sprintf("s%d", i), 1)
						switch {
						case err == nil:
							sold.Add(1)
							assert.NotEmpty(t, res.OrderID)
						case errors.Is(err, ErrSoldOut):
							soldOut.Add(1)
						default:
							t.Errorf("shopper %d: %v", i, err)
						}
					})
				}
				wg.Wait()
				assert.Equal(t, int64(stock), sold.Load())
				assert.Equal(t, int64(shoppers-stock), soldOut.Load())
				st, queued := b.state(t)
				assert.Equal(t, int64(stock), st.Total)
				assert.Zero(t, st.Left)
				assert.Zero(t, st.Moved, "every move settled")
				assert.Equal(t, int64(stock), st.Taken())
				assert.Equal(t, int64(stock), queued)
			})
		}
	}
}

// A shopper keeps to one bucket, so the per-user limit holds however many
// buckets the SKU has and however the requests are spread over instances.
func TestTheLimitHoldsAcrossBuckets(t *testing.T) {
	const limit, shoppers, tries = 2, 20, 8
	b := newBucketSale(t, StrategyAtomic, 1000, limit, 6)
	var wg sync.WaitGroup
	got := make([]atomic.Int64, shoppers)
	for u := range shoppers {
		for i := range tries {
			wg.Go(func() {
				_, err := b.buy(i, fmt.Sprintf("u%d", u), 1)
				if err == nil {
					got[u].Add(1)
				} else {
					assert.ErrorIs(t, err, ErrLimitExceeded)
				}
			})
		}
	}
	wg.Wait()
	for u := range shoppers {
		assert.Equal(t, int64(limit), got[u].Load(), "shopper u%d", u)
	}
	st, queued := b.state(t)
	assert.Equal(t, int64(limit*shoppers), queued)
	assert.Equal(t, int64(limit*shoppers), st.Taken())
}

// Units given back to any bucket (a cancel, an expiry) are bought again by
// a shopper whose home is another bucket.
func TestReturnedUnitsAreSoldAgainFromAnyBucket(t *testing.T) {
	b := newBucketSale(t, StrategyLock, 3, 1, 3)
	var ids []string
	for i := 0; len(ids) < 3; i++ {
		res, err := b.buy(i, fmt.Sprintf("a%d", i), 1)
		require.NoError(t, err)
		ids = append(ids, res.OrderID)
	}
	_, err := b.buy(0, "late", 1)
	require.ErrorIs(t, err, ErrSoldOut)
	p := PartOf(b.sku, ids[0])
	var o OrderTask
	orders, _, err := b.store.QueuedOrders(b.ctx, p)
	require.NoError(t, err)
	for _, q := range orders {
		if q.OrderID == ids[0] {
			o = q
		}
	}
	returned, err := b.store.Return(b.ctx, p, o.OrderID, o.User, o.Qty, ReturnClosed)
	require.NoError(t, err)
	require.True(t, returned)
	// A shopper whose home is another bucket.
	user := "late"
	for i := 0; Home(b.sku, b.buckets, user) == p; i++ {
		user = fmt.Sprintf("late%d", i)
	}
	require.Eventually(t, func() bool {
		_, err := b.buy(1, user, 1)
		return err == nil
	}, 3*time.Second, 20*time.Millisecond, "the returned unit is on sale again")
	st, _ := b.state(t)
	assert.Zero(t, st.Left)
	assert.Equal(t, int64(3), st.Taken())
}

// A move between buckets is two steps. The second is idempotent, and one
// that comes after a rebuild (a new epoch) adds nothing: the rebuild
// already counted the units where it found them.
func TestAMoveBetweenBucketsLandsOnce(t *testing.T) {
	b := newBucketSale(t, StrategyAtomic, 30, 1, 3)
	from, to := Part{SKU: b.sku, Bucket: 1}, Part{SKU: b.sku, Bucket: 2}
	fk, tk := newKeys(b.store.o.Prefix, from), newKeys(b.store.o.Prefix, to)
	raw, err := lendScript.Run(b.ctx, b.store.rdb, []string{fk.stock, fk.paused, fk.lent}, "t1", 4, 2).Slice()
	require.NoError(t, err)
	n, epoch := toInt(raw[1]), fmt.Sprint(raw[2])
	assert.Equal(t, int64(5), n, "half of the 10 left, at least the 4 needed")
	st, _ := b.state(t)
	assert.Equal(t, int64(25), st.Left)
	assert.Equal(t, int64(-5), st.Moved, "in flight")

	code, err := b.store.receive(b.ctx, tk, "t1", n, epoch)
	require.NoError(t, err)
	assert.Equal(t, int64(1), code)
	code, err = b.store.receive(b.ctx, tk, "t1", n, epoch)
	require.NoError(t, err)
	assert.Equal(t, int64(0), code, "received before: nothing added again")
	code, err = b.store.receive(b.ctx, tk, "t2", n, "an-older-epoch")
	require.NoError(t, err)
	assert.Equal(t, int64(-6), code)
	st, _ = b.state(t)
	assert.Equal(t, int64(30), st.Left)
	assert.Zero(t, st.Moved)
	assert.Equal(t, int64(30), st.Total)
}

// A SKU's total is spread over its buckets; a top-up and a cut change the
// whole, and a cut below what is taken is refused with nothing changed.
func TestConfigureSpreadsTheTotalOverBuckets(t *testing.T) {
	b := newBucketSale(t, StrategyAtomic, 10, 5, 3)
	sts, _, err := b.store.States(b.ctx, Parts(b.sku, 3))
	require.NoError(t, err)
	assert.Equal(t, []int64{4, 3, 3}, []int64{sts[0].Left, sts[1].Left, sts[2].Left})
	sold := 0
	for i := 0; sold < 6; i++ {
		_, err := b.buy(i, fmt.Sprintf("c%d", i), 1)
		require.NoError(t, err)
		sold++
	}
	cfg := Config{Total: 5, Limit: 5, Buckets: 3, Expires: time.Now().Add(time.Hour)}
	left, err := b.store.Configure(b.ctx, b.sku, cfg, false)
	require.ErrorIs(t, err, ErrBelowTaken)
	assert.Equal(t, int64(4), left)
	st, _ := b.state(t)
	assert.Equal(t, int64(10), st.Total, "nothing changed")
	assert.Equal(t, int64(4), st.Left)

	cfg.Total = 7
	left, err = b.store.Configure(b.ctx, b.sku, cfg, false)
	require.NoError(t, err)
	assert.Equal(t, int64(1), left)
	cfg.Total = 20
	left, err = b.store.Configure(b.ctx, b.sku, cfg, false)
	require.NoError(t, err)
	assert.Equal(t, int64(14), left)
	st, _ = b.state(t)
	assert.Equal(t, int64(20), st.Total)
	assert.Equal(t, int64(6), st.Taken())
}

// A rebuild that stops after writing some buckets (its process died)
// leaves those with nothing to sell and bucket 0 as it was once the pause
// expires: the SKU undersells, never oversells. A move between buckets
// written by different rebuilds is refused by the receiver; its units stay
// in flight in the lender's lent hash (not lost) and a rebuild is asked
// for, which counts them from SQL.
func TestARebuildStoppedPartWayUndersells(t *testing.T) {
	b := newBucketSale(t, StrategyAtomic, 9, 1, 3)
	var lost atomic.Int64
	for _, s := range b.sellers {
		s.o.OnStateLost = func(sku uint64) {
			assert.Equal(t, b.sku, sku)
			lost.Add(1)
		}
	}
	parts := Parts(b.sku, b.buckets)
	// A move from bucket 1 to 0 begun before the rebuild, never received.
	fk := newKeys(b.store.o.Prefix, parts[1])
	raw, err := lendScript.Run(b.ctx, b.store.rdb, []string{fk.stock, fk.paused, fk.lent}, "old", 1, 0).Slice()
	require.NoError(t, err)
	lent, epoch := toInt(raw[1]), fmt.Sprint(raw[2])
	require.Positive(t, lent)

	token, err := b.store.Pause(b.ctx, parts, 300*time.Millisecond)
	require.NoError(t, err)
	cfg := Config{Total: 9, Limit: 1, Buckets: 3, Expires: time.Now().Add(time.Hour)}
	for _, p := range parts[1:] {
		r := Rebuilt{Config: cfg, Buyers: map[string]int64{}}
		r.Total = 0
		require.NoError(t, b.store.Rebuild(b.ctx, p, token, r))
	}
	// The process dies here: bucket 0 is never written.
	code, err := b.store.receive(b.ctx, newKeys(b.store.o.Prefix, parts[0]), "old", lent, epoch)
	require.ErrorIs(t, err, ErrBusy, "bucket 0 is still paused")
	assert.Equal(t, int64(-4), code)
	time.Sleep(400 * time.Millisecond)

	// A shopper of bucket 1 finds nothing there; units move from bucket 0,
	// whose epoch is the old one, and bucket 1 refuses them. They stay in
	// flight and a rebuild is asked for; the shopper is told to retry.
	_, err = b.buy(0, b.userIn(1, "q"), 1)
	require.ErrorIs(t, err, ErrBusy)
	// OnStateLost runs in its own goroutine.
	assert.Eventually(t, func() bool { return lost.Load() == 1 }, 5*time.Second, 5*time.Millisecond, "a rebuild was asked for")
	st, _ := b.state(t)
	require.Negative(t, st.Moved, "units lent by bucket 0")

	var sold atomic.Int64
	var wg sync.WaitGroup
	for i := range 60 {
		wg.Go(func() {
			if _, err := b.buy(i, fmt.Sprintf("p%d", i), 1); err == nil {
				sold.Add(1)
			}
		})
	}
	wg.Wait()
	// At most bucket 0's own 3 units: a move from bucket 0 (old epoch) to a
	// rebuilt bucket is refused. None, when the shoppers of the rebuilt
	// buckets had all of them lent before bucket 0's own came: the SKU
	// undersells until the rebuild.
	assert.LessOrEqual(t, sold.Load(), int64(3))
	st, queued := b.state(t)
	assert.Equal(t, sold.Load(), queued)
	assert.Equal(t, sold.Load(), st.Taken())
	assert.Equal(t, int64(3), st.Taken()+st.Left-st.Moved, "bucket 0's units: sold, left or in flight")
	// Units in flight are moves kept in bucket 0's lent hash, for the
	// rebuild to count.
	moves, err := b.store.rdb.HGetAll(b.ctx, newKeys(b.store.o.Prefix, parts[0]).lent).Result()
	require.NoError(t, err)
	var n int64
	for _, v := range moves {
		units, _, _, ok := parseMove(v)
		require.True(t, ok, v)
		n += units
	}
	assert.Equal(t, -st.Moved, n, "every unit in flight is a move kept in the lent hash")
}

// A move that never lands (its process died between lending and receiving)
// is landed by the seller that finds the SKU otherwise sold out: every
// unit sells, and then the sold-out flag refuses from memory.
func TestAStuckMoveIsLandedAndSold(t *testing.T) {
	b := newBucketSale(t, StrategyAtomic, 6, 1, 3)
	fk := newKeys(b.store.o.Prefix, Part{SKU: b.sku, Bucket: 1})
	_, err := lendScript.Run(b.ctx, b.store.rdb, []string{fk.stock, fk.paused, fk.lent}, "stuck", 2, 2).Slice()
	require.NoError(t, err)
	sold := 0
	for i := 0; i < 40; i++ {
		_, err := b.buy(0, fmt.Sprintf("s%d", i), 1)
		if err == nil {
			sold++
			continue
		}
		require.ErrorIs(t, err, ErrSoldOut)
		assert.Equal(t, 6, sold, "the 2 units that were stuck moving are sold too")
		assert.True(t, b.sellers[0].SoldOut(b.sku), "sold out for good: refused from memory")
		st, _ := b.state(t)
		assert.Zero(t, st.Moved, "nothing in flight")
		return
	}
	t.Fatal("never sold out")
}
