package stock

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/lock"
	"github.com/seckill/seckill/internal/testsvc"
)

// A SKU's combining line stops when it has had nothing to do for LineIdle,
// without losing a request that arrives as it stops, and the next request
// starts a new one.
func TestIdleLinesStopAndRequestsStillGetAnswers(t *testing.T) {
	for _, strategy := range []string{StrategyLock, StrategyAtomic} {
		t.Run(strategy, func(t *testing.T) {
			rdb, prefix := testsvc.Redis(t)
			ctx := context.Background()
			store := NewStore(rdb, StoreOptions{Prefix: prefix})
			locks := lock.New(rdb, lock.Options{Prefix: prefix})
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
					id := fmt.Sprintf("%d-%d", sku, n)
					wg.Go(func() {
						res, err := s.Buy(ctx, sku, Request{User: user, Qty: 1, OrderID: id, Created: time.Now()})
						assert.NoError(t, err)
						assert.Equal(t, id, res.OrderID)
					})
				}
				wg.Wait()
				time.Sleep(time.Duration(round) * 2 * time.Millisecond)
			}
			assert.Eventually(t, func() bool { return s.Lines() == 0 }, 5*time.Second, 10*time.Millisecond)
			st, _, err := store.State(ctx, sku)
			require.NoError(t, err)
			assert.Equal(t, int64(1000-n), st.Left)
		})
	}
}
