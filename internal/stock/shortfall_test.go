package stock

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Every shopper of a crowd that wants exactly the stock gets what they
// asked for: a SKU split into 6 buckets on the Cluster, 60 shoppers firing
// 20 concurrent buys each with a limit of 2, plus 10 shoppers who buy one
// unit with a request id, for a stock of 130. A sold_out answer is final
// for a shopper, so one given while a bucket still held a unit (or one was
// moving between buckets) leaves that unit unsold and the shopper short.
// A busy answer means nothing happened, and is retried.
func TestABucketedCrowdGetsEveryUnit(t *testing.T) {
	for _, strategy := range []string{StrategyAtomic, StrategyLock} {
		t.Run(strategy, func(t *testing.T) {
			const shoppers, tries, limit, ridShoppers = 60, 20, 2, 10
			const total = shoppers*limit + ridShoppers
			b := newBucketSale(t, strategy, total, limit, 6)
			got := make([]atomic.Int64, shoppers+ridShoppers)
			var soldOut, busy atomic.Int64
			var wg sync.WaitGroup
			buy := func(i, u int, rid string) {
				req := Request{User: fmt.Sprintf("s%d", u), Qty: 1, RequestID: rid, Created: time.Now()}
				for {
					res, err := b.sellers[i%2].Buy(b.ctx, Layout{SKU: b.sku, Buckets: b.buckets}, req)
					switch {
					case errors.Is(err, ErrBusy):
						busy.Add(1)
						time.Sleep(5 * time.Millisecond)
						continue
					case err == nil:
						if !res.Replayed {
							got[u].Add(1)
						}
					case errors.Is(err, ErrSoldOut):
						soldOut.Add(1)
					default:
						assert.ErrorIs(t, err, ErrLimitExceeded, "shopper s%d", u)
					}
					return
				}
			}
			for u := range shoppers {
				for i := range tries {
					wg.Go(func() { buy(i, u, "") })
				}
			}
			for u := shoppers; u < shoppers+ridShoppers; u++ {
				wg.Go(func() { buy(u, u, "rid-"+fmt.Sprint(u)) })
			}
			wg.Wait()
			short := 0
			for u := range shoppers + ridShoppers {
				want := int64(limit)
				if u >= shoppers {
					want = 1
				}
				if got[u].Load() != want {
					short++
					t.Errorf("shopper s%d got %d of %d", u, got[u].Load(), want)
				}
			}
			t.Logf("%d sold_out answers, %d busy answers retried", soldOut.Load(), busy.Load())
			st, queued := b.state(t)
			assert.Zero(t, short, "%d sold_out answers", soldOut.Load())
			assert.Zero(t, st.Left, "no unit is left unsold")
			assert.Equal(t, int64(total), queued)
			assert.Equal(t, int64(total), st.Taken())
		})
	}
}
