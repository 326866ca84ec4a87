package stock

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/orderid"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/lock"
)

// A SKU's combining line stops when it has had nothing to do for LineIdle,
// without losing a request that arrives as it stops, and the next request
// starts a new one.
func TestIdleLinesStopAndRequestsStillGetAnswers(t *testing.T) {
	for _, strategy := range []string{StrategyLock, StrategyAtomic} {
		t.Run(strategy, func(t *testing.T) {
			rdb, prefix := testsvc.Redis(t)
			ctx := t.Context()
			store := NewStore(rdb, StoreOptions{Prefix: prefix})
			locks := lock.New(rdb, lock.WithPrefix(prefix+"lock:"))
			t.Cleanup(func() { _ = locks.Close() })
			s := NewSeller(ctx, rdb, store, locks, SellerOptions{Strategy: strategy, LineIdle: 20 * time.Millisecond})
			t.Cleanup(s.Close)
			const sku = 9
			_, err := store.Configure(ctx, sku, Config{Total: 1000, Limit: 1, Expires: time.Now().Add(time.Hour)}, true)
			require.NoError(t, err)

			n := 0
			for round := range 20 {
				// Buys arriving around the moment the line goes idle.
				var wg sync.WaitGroup
				for i := range 10 {
					n++
					user := fmt.Sprintf("u%d-%d", round, i)
					wg.Go(func() {
						res, err := s.Buy(ctx, Layout{SKU: sku}, Request{User: user, Qty: 1, Created: time.Now()})
						assert.NoError(t, err)
						gotSKU, _, _, ok := orderid.Parse(res.OrderID)
						assert.True(t, ok && gotSKU == sku, res.OrderID)
					})
				}
				wg.Wait()
				time.Sleep(time.Duration(round) * 2 * time.Millisecond)
			}
			assert.Eventually(t, func() bool { return s.Lines() == 0 }, 5*time.Second, 10*time.Millisecond)
			st, _, err := store.State(ctx, Part{SKU: sku})
			require.NoError(t, err)
			assert.Equal(t, int64(1000-n), st.Left)
		})
	}
}

// countScripts counts the lock acquisitions (fenced acquire scripts that
// got the lock; a waiter's failed tries are not acquisitions) and the buy
// scripts sent to Redis.
type countScripts struct{ acquires, buys atomic.Int64 }

func (c *countScripts) count(cmd redis.Cmder) {
	for _, a := range cmd.Args() {
		s, _ := a.(string)
		switch {
		case strings.HasSuffix(s, ":fence"):
			if r, ok := cmd.(*redis.Cmd); ok && r.Err() == nil && r.Val() != int64(0) {
				c.acquires.Add(1)
			}
			return
		case strings.HasSuffix(s, ":stock"):
			c.buys.Add(1)
			return
		}
	}
}

func (c *countScripts) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *countScripts) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		c.count(cmd)
		return err
	}
}
func (c *countScripts) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// countedSale is a Store on the test Redis with sku on sale (total units,
// one per shopper), and what its client sends from then on counted.
func countedSale(t *testing.T, sku uint64, total int64) (context.Context, *redis.Client, string, *Store, *countScripts) {
	t.Helper()
	rdb, prefix := testsvc.Redis(t)
	ctx := t.Context()
	store := NewStore(rdb, StoreOptions{Prefix: prefix})
	_, err := store.Configure(ctx, sku, Config{Total: total, Limit: 1, Expires: time.Now().Add(time.Hour)}, true)
	require.NoError(t, err)
	counts := &countScripts{}
	rdb.AddHook(counts)
	return ctx, rdb, prefix, store, counts
}

// Under a crowd, a line keeps the SKU lock across consecutive batches
// (fewer acquisitions than batches), two instances both get their turns,
// and the stock taken matches the orders accepted.
func TestLinesKeepTheLockAcrossBatchesAndShareIt(t *testing.T) {
	const sku = 31
	ctx, rdb, prefix, store, counts := countedSale(t, sku, 100000)
	var sellers [2]*Seller
	for i := range sellers {
		locks := lock.New(rdb, lock.WithPrefix(prefix+"lock:"))
		t.Cleanup(func() { _ = locks.Close() })
		sellers[i] = NewSeller(ctx, rdb, store, locks, SellerOptions{Strategy: StrategyLock, LockWait: 2 * time.Second})
		t.Cleanup(sellers[i].Close)
	}
	var accepted [2]atomic.Int64
	var wg sync.WaitGroup
	for i := range 2000 {
		wg.Go(func() {
			n := i % 2
			user := fmt.Sprintf("u%d", i)
			_, err := sellers[n].Buy(ctx, Layout{SKU: sku}, Request{User: user, Qty: 1, Created: time.Now()})
			if assert.NoError(t, err) {
				accepted[n].Add(1)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int64(1000), accepted[0].Load())
	assert.Equal(t, int64(1000), accepted[1].Load())
	st, _, err := store.State(ctx, Part{SKU: sku})
	require.NoError(t, err)
	assert.Equal(t, int64(100000-2000), st.Left)
	t.Logf("%d lock acquisitions for %d buy scripts", counts.acquires.Load(), counts.buys.Load())
	assert.Less(t, counts.acquires.Load(), counts.buys.Load(), "batches in a row share an acquisition")
}

// A sold-out flag clears on every instance as soon as units come back (the
// stock-back message), long before SoldOutRecheck, and a message about
// another SKU or with a bad payload clears nothing.
func TestStockBackClearsSoldOutEverywhere(t *testing.T) {
	rdb, prefix := testsvc.Redis(t)
	ctx := t.Context()
	store := NewStore(rdb, StoreOptions{Prefix: prefix})
	locks := lock.New(rdb, lock.WithPrefix(prefix+"lock:"))
	t.Cleanup(func() { _ = locks.Close() })
	const sku, other = 41, 42
	var sellers [2]*Seller
	for i := range sellers {
		sellers[i] = NewSeller(ctx, rdb, store, locks, SellerOptions{SoldOutRecheck: time.Hour})
		t.Cleanup(sellers[i].Close)
	}
	channel := stockBackChannel(prefix)
	require.Eventually(t, func() bool {
		n, err := rdb.PubSubNumSub(ctx, channel).Result()
		return err == nil && n[channel] == 2
	}, 10*time.Second, 5*time.Millisecond, "one subscription per seller")

	for _, s := range sellers {
		s.markSoldOut(sku, time.Hour)
		s.markSoldOut(other, time.Hour)
	}
	require.NoError(t, rdb.Publish(ctx, channel, "not-a-sku").Err())
	require.NoError(t, rdb.Publish(ctx, channel, strconv.Itoa(sku)).Err())
	for _, s := range sellers {
		assert.Eventually(t, func() bool { return !s.SoldOut(sku) }, 10*time.Second, 5*time.Millisecond)
		assert.True(t, s.SoldOut(other), "another SKU stays sold out")
	}
}

// Requests queued on a line while its batch finds the SKU sold out are
// answered sold out with no buy script, as Buy answers at its start, and a
// line that kept the SKU lock gives it back for other instances.
func TestRequestsQueuedBehindTheEndCostNoScript(t *testing.T) {
	const sku = 51
	ctx, rdb, prefix, store, counts := countedSale(t, sku, 1)
	locks := lock.New(rdb, lock.WithPrefix(prefix+"lock:"))
	t.Cleanup(func() { _ = locks.Close() })
	s := NewSeller(ctx, rdb, store, locks, SellerOptions{Strategy: StrategyLock, BatchMax: 2, LockWait: 10 * time.Second})
	t.Cleanup(s.Close)

	// Hold the SKU lock so the line's first batch waits, and the other
	// requests queue behind it.
	p := Part{SKU: sku}
	m, err := locks.Lock(ctx, p.Tag(), 10*time.Second, lock.WithFencing())
	require.NoError(t, err)
	var accepted, soldOut atomic.Int64
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() {
			_, err := s.Buy(ctx, Layout{SKU: sku}, Request{User: fmt.Sprintf("u%d", i), Qty: 1, Created: time.Now()})
			switch {
			case err == nil:
				accepted.Add(1)
			case assert.ErrorIs(t, err, ErrSoldOut):
				soldOut.Add(1)
			}
		})
	}
	require.Eventually(t, func() bool {
		l, ok := s.lines.Load(p)
		return ok && len(l.(*line).ch) >= 4
	}, 10*time.Second, 5*time.Millisecond, "the first batch waits for the lock, the others queue")
	require.NoError(t, m.Unlock(ctx))
	wg.Wait()

	assert.Equal(t, int64(1), accepted.Load())
	assert.Equal(t, int64(5), soldOut.Load())
	assert.Equal(t, int64(1), counts.buys.Load(), "only the first batch ran the buy script")
	m, err = locks.TryLock(ctx, p.Tag(), time.Second)
	require.NoError(t, err, "the line gave the lock back")
	require.NoError(t, m.Unlock(ctx))
}
