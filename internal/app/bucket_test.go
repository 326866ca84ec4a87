package app

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/api/client"
	"github.com/seckill/seckill/internal/sale"
	"github.com/seckill/seckill/internal/stock"
)

// seedBuckets seeds a live SKU of units split into buckets.
func (s *deployment) seedBuckets(units int64, limit, buckets int) uint64 {
	s.t.Helper()
	now := time.Now().UTC()
	return s.seedSpec(client.SKUSpec{Name: ptr("Phone"), PriceCents: ptr(int64(99900)), Stock: &units, PerUserLimit: &limit,
		Buckets: &buckets, StartsAt: ptr(now.Add(-time.Minute)), EndsAt: ptr(now.Add(time.Hour))})
}

// requireBucketsConsistent fails unless rep reports buckets buckets, each
// consistent.
func requireBucketsConsistent(t *testing.T, rep sale.Report, buckets int) {
	t.Helper()
	require.Len(t, rep.Buckets, buckets)
	for _, b := range rep.Buckets {
		assert.True(t, b.Consistent, "bucket %+v", b)
	}
}

// The flash sale on the 3-master Cluster with the stock split into
// buckets: exactly the stock is sold to a crowd of distinct shoppers over
// three instances, each bucket's orders match its Redis state, and no
// bucket keeps a unit while a shopper is told sold out.
func TestFlashSaleWithBuckets(t *testing.T) {
	for _, strategy := range []string{"lock", "atomic"} {
		for _, buckets := range []int{3, 6} {
			t.Run(fmt.Sprintf("%s/%d", strategy, buckets), func(t *testing.T) {
				s := startSale(t, saleOpts{instances: 3, cluster: true, env: map[string]string{"SECKILL_STOCK_STRATEGY": strategy}})
				const units = 10
				rep := flashSaleOf(t, s, s.seedBuckets(units, 1, buckets), units, 2000)
				assert.Zero(t, rep.InFlight)
				requireBucketsConsistent(t, rep, buckets)
				for _, b := range rep.Buckets {
					assert.Equal(t, int64(0), *b.RedisLeft, "bucket %d keeps no unit", b.Bucket)
				}
			})
		}
	}
}

// A shopper always buys from one bucket, so the per-user limit holds across
// buckets and instances: nobody gets limit × buckets.
func TestTheLimitHoldsAcrossBucketsAndInstances(t *testing.T) {
	s := startSale(t, saleOpts{instances: 3, cluster: true})
	const limit, shoppers, tries = 2, 30, 6
	sku := s.seedBuckets(1000, limit, 6)
	got := make([]atomic.Int64, shoppers)
	var wg sync.WaitGroup
	for u := range shoppers {
		for i := range tries {
			wg.Go(func() {
				// Each try is a new request (its own request id).
				r := s.buy(u*tries+i, sku, fmt.Sprintf("u%d", u), 1)
				for r.Status == http.StatusServiceUnavailable {
					time.Sleep(20 * time.Millisecond)
					r = s.buy(u*tries+i, sku, fmt.Sprintf("u%d", u), 1)
				}
				if r.Status == http.StatusAccepted {
					got[u].Add(1)
				} else {
					assert.Equal(t, "limit_exceeded", r.Str("error"), r.Raw)
				}
			})
		}
	}
	wg.Wait()
	for u := range shoppers {
		assert.Equal(t, int64(limit), got[u].Load(), "shopper u%d", u)
	}
	rep := s.drained(sku)
	assert.Zero(t, rep.OverLimitUsers)
	assert.Equal(t, int64(limit*shoppers), rep.Sold)
	requireBucketsConsistent(t, rep, 6)
}

// Units given back in one bucket (a cancel) are bought by a shopper of
// another; a request id is replayed from its bucket; after Redis lost
// everything, the rebuild from SQL puts each shopper's units, request ids
// and returned orders back in their bucket: the limit and the replays
// still hold and exactly the stock is sold.
func TestBucketsReturnReplayAndRebuild(t *testing.T) {
	s := startSale(t, saleOpts{instances: 2, cluster: true})
	const units, buckets = 6, 3
	sku := s.seedBuckets(units, 1, buckets)
	ids := map[string]string{}
	for i := range units {
		user := fmt.Sprintf("b%d", i)
		r := s.do(i, "POST", "/api/v1/orders", user, map[string]any{"sku_id": sku, "qty": 1, "request_id": "r1"})
		require.Equal(t, http.StatusAccepted, r.Status, r.Raw)
		ids[user] = r.Str("order_id")
	}
	assert.Equal(t, "sold_out", s.buy(0, sku, "late", 1).Str("error"))

	// b0 cancels; a shopper whose home is another bucket buys the unit.
	s.waitStatus("b0", ids["b0"], "pending_payment")
	c := s.do(1, "POST", "/api/v1/orders/"+ids["b0"]+"/cancel", "b0", nil)
	require.Equal(t, http.StatusOK, c.Status, c.Raw)
	home := stock.PartOf(sku, ids["b0"])
	other := "late"
	for i := 0; stock.Home(sku, buckets, other) == home; i++ {
		other = fmt.Sprintf("late%d", i)
	}
	require.Eventually(t, func() bool { return s.buy(0, sku, other, 1).Status == http.StatusAccepted }, 5*time.Second, 50*time.Millisecond)
	s.drained(sku)

	wipe(t, s)
	r := s.do(0, "POST", fmt.Sprintf("/admin/skus/%d/reconcile", sku), "", nil)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	rep := s.drained(sku)
	requireBucketsConsistent(t, rep, buckets)
	assert.Equal(t, int64(units), rep.Sold)
	assert.Equal(t, int64(0), *rep.RedisLeft)

	// Every request id is answered with its order, from any instance.
	for i := 1; i < units; i++ {
		user := fmt.Sprintf("b%d", i)
		again := s.do(i, "POST", "/api/v1/orders", user, map[string]any{"sku_id": sku, "qty": 1, "request_id": "r1"})
		require.Equal(t, http.StatusAccepted, again.Status, again.Raw)
		assert.Equal(t, ids[user], again.Str("order_id"))
	}
	// b0's cancelled order stays returned: cancelling again gives nothing.
	c = s.do(0, "POST", "/api/v1/orders/"+ids["b0"]+"/cancel", "b0", nil)
	require.Equal(t, http.StatusOK, c.Status, c.Raw)
	top := s.do(0, "PUT", fmt.Sprintf("/admin/skus/%d/stock", sku), "", map[string]any{"stock_total": units + 2})
	require.Equal(t, http.StatusOK, top.Status, top.Raw)
	assert.Equal(t, int64(2), top.Num("stock_left"))
	// The limit holds after the rebuild; the two new units go to new shoppers.
	assert.Equal(t, "limit_exceeded", s.buy(0, sku, "b1", 1).Str("error"))
	for _, u := range []string{"n1", "n2"} {
		assert.Equal(t, http.StatusAccepted, s.buy(1, sku, u, 1).Status)
	}
	assert.Equal(t, "sold_out", s.buy(0, sku, "n3", 1).Str("error"))
	rep = s.drained(sku)
	assert.Equal(t, int64(units+2), rep.Sold)
}

// An instance that dies between the two steps of a move between buckets
// (the units were lent, never received) leaves them on sale nowhere for a
// moment: the audit names the units in flight. The next buyer who finds
// the SKU otherwise out of units lands the move (it is received once,
// whoever receives it): every unit sells, none twice.
func TestABucketMoveCutShortIsLandedAndSold(t *testing.T) {
	s := startSale(t, saleOpts{instances: 2, cluster: true})
	const units, buckets = 9, 3
	sku := s.seedBuckets(units, 1, buckets)
	ctx := t.Context()
	// The first step of lend.lua, as a process that died right after it.
	from := s.env["SECKILL_REDIS_KEY_PREFIX"] + stock.Part{SKU: sku, Bucket: 1}.Tag()
	pipe := s.apps[0].Redis.TxPipeline()
	pipe.HIncrBy(ctx, from+":stock", "left", -3)
	pipe.HIncrBy(ctx, from+":stock", "moved", -3)
	pipe.HIncrBy(ctx, from+":stock", "ver", 1)
	pipe.HSet(ctx, from+":lent", "1>2:dead", "3:2:0")
	_, err := pipe.Exec(ctx)
	require.NoError(t, err)

	rep := s.audit(sku)
	assert.Equal(t, int64(3), rep.InFlight)
	assert.False(t, rep.Consistent)

	var accepted atomic.Int64
	var wg sync.WaitGroup
	for i := range 60 {
		wg.Go(func() {
			r, _ := s.buyRetrying(i, sku, fmt.Sprintf("m%d", i), 1)
			if r.Status == http.StatusAccepted {
				accepted.Add(1)
			} else {
				assert.Equal(t, "sold_out", r.Str("error"), r.Raw)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int64(units), accepted.Load(), "the units that were in flight are sold too")
	rep = s.drained(sku)
	assert.Zero(t, rep.InFlight)
	assert.Zero(t, *rep.RedisLeft)
	assert.Equal(t, int64(units), rep.Sold)
}

// userIn returns a shopper name whose home is bucket b of sku.
func userIn(sku uint64, buckets, b int, prefix string) string {
	for i := 0; ; i++ {
		u := fmt.Sprintf("%s%d", prefix, i)
		if stock.Home(sku, buckets, u).Bucket == b {
			return u
		}
	}
}

// Queued orders of any bucket are found by their id and in the shopper's
// list; the queue report adds the buckets up; a dead letter of bucket 2 is
// listed, requeued and dropped by its id, and dropping it gives its unit
// back to its bucket.
func TestQueuesAndDeadLettersOfBuckets(t *testing.T) {
	s := startSale(t, saleOpts{noWorkers: true, cluster: true, env: map[string]string{"SECKILL_ORDER_MAX_ATTEMPTS": "1"}})
	const buckets = 3
	sku := s.seedBuckets(6, 1, buckets)
	for b := range buckets {
		user := userIn(sku, buckets, b, "q")
		id := s.order(0, sku, user)
		p := stock.PartOf(sku, id)
		assert.Equal(t, b, p.Bucket, id)
		got := s.do(0, "GET", "/api/v1/orders/"+id, user, nil)
		require.Equal(t, http.StatusOK, got.Status, got.Raw)
		assert.Equal(t, "queued", got.Str("status"))
		list := s.do(0, "GET", "/api/v1/orders", user, nil)
		require.Equal(t, http.StatusOK, list.Status, list.Raw)
		items, _ := list.Body["items"].([]any)
		require.Len(t, items, 1, list.Raw)
		assert.Equal(t, id, items[0].(map[string]any)["order_id"])
	}
	q := s.do(0, "GET", fmt.Sprintf("/admin/skus/%d/queue", sku), "", nil)
	require.Equal(t, http.StatusOK, q.Status, q.Raw)
	assert.Equal(t, int64(3), q.Num("due"))
	next, _ := q.Body["next"].([]any)
	assert.Len(t, next, 3)
	perBucket, _ := q.Body["buckets"].([]any)
	require.Len(t, perBucket, buckets, "each bucket's depths: %s", q.Raw)
	for b, v := range perBucket {
		assert.Equal(t, map[string]any{"bucket": float64(b), "due": 1.0, "delayed": 0.0, "in_flight": 0.0, "dead": 0.0}, v)
	}

	// A SKU of its own, so bucket 2's queue holds only the dead letter.
	sku2 := s.seedBuckets(6, 1, buckets)
	task, orderID := deadLetter(t, s, sku2, userIn(sku2, buckets, 2, "d"))
	p := stock.PartOf(sku2, orderID)
	require.Equal(t, 2, p.Bucket)
	list := s.do(0, "GET", fmt.Sprintf("/admin/skus/%d/dead", sku2), "", nil)
	require.Equal(t, http.StatusOK, list.Status, list.Raw)
	dead, _ := list.Body["dead"].([]any)
	require.Len(t, dead, 1)
	assert.Equal(t, task, dead[0].(map[string]any)["id"])
	req := s.do(0, "POST", fmt.Sprintf("/admin/skus/%d/dead/%s/requeue", sku2, task), "", nil)
	require.Equal(t, http.StatusOK, req.Status, req.Raw)
	assert.Zero(t, s.audit(sku2).DeadLetters)

	// Dead again, then dropped: its unit is on sale again.
	ctx := t.Context()
	claimed, err := s.apps[0].Stock.Queue(p).Claim(ctx, 10, time.Minute)
	require.NoError(t, err)
	for _, c := range claimed {
		if c.ID == task {
			_, err := s.apps[0].Stock.Queue(p).Nack(ctx, c, fmt.Errorf("injected failure"))
			require.NoError(t, err)
		}
	}
	require.Equal(t, int64(1), s.audit(sku2).DeadLetters)
	del := s.do(0, "DELETE", fmt.Sprintf("/admin/skus/%d/dead/%s", sku2, task), "", nil)
	require.Equal(t, http.StatusOK, del.Status, del.Raw)
	rep := s.audit(sku2)
	assert.Zero(t, rep.DeadLetters)
	assert.Equal(t, int64(6), *rep.RedisLeft, "the dropped order's unit is back")
}

// Unpaid orders of every bucket expire once, each from its bucket's queue,
// and their units return to the bucket they came from and sell again.
func TestUnpaidOrdersOfBucketsExpireOnce(t *testing.T) {
	s := startSale(t, saleOpts{instances: 2, cluster: true, env: map[string]string{"SECKILL_ORDER_PAYMENT_TIMEOUT": "1s"}})
	const buckets = 3
	sku := s.seedBuckets(3, 1, buckets)
	users := map[string]string{}
	for b := range buckets {
		u := userIn(sku, buckets, b, "x")
		users[u] = s.order(b, sku, u)
	}
	for u, id := range users {
		s.waitStatus(u, id, "expired")
	}
	rep := s.drained(sku)
	assert.Equal(t, int64(3), rep.Expired)
	assert.Equal(t, int64(3), *rep.RedisLeft, "each unit returned exactly once")
	requireBucketsConsistent(t, rep, buckets)
	for b := range buckets {
		assert.Equal(t, http.StatusAccepted, s.buy(b, sku, userIn(sku, buckets, (b+1)%buckets, "y"), 1).Status)
	}
	assert.Equal(t, "sold_out", s.buy(0, sku, "z", 1).Str("error"))
}

// A crowd that wants exactly the stock of a SKU split into 6 buckets gets
// all of it, over the API of two instances on the Cluster: 60 shoppers
// fire 20 concurrent buys each with a limit of 2, and 10 more buy one unit
// with a request id, for a stock of 130. A sold_out answer is final for a
// shopper; busy says nothing happened and is retried after a pause, as
// Retry-After asks; unavailable (a store stalled: outcome unknown, as a
// loaded machine may give) is retried with the request id it carries, as
// docs/shop/api.md#buying says, to learn the outcome. Every shopper ends with their limit, no unit is left in
// any bucket, and the audit is consistent. SECKILL_BUCKET_RUNS sets how
// many sales run one after the other (default 3).
func TestABucketedCrowdGetsEveryUnitOverTheAPI(t *testing.T) {
	runs := 3
	if v := os.Getenv("SECKILL_BUCKET_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "SECKILL_BUCKET_RUNS")
		runs = n
	}
	s := startSale(t, saleOpts{instances: 2, cluster: true})
	const shoppers, tries, limit, ridShoppers = 60, 20, 2, 10
	const units = shoppers*limit + ridShoppers
	for run := range runs {
		sku := s.seedBuckets(units, limit, 6)
		got := make([]atomic.Int64, shoppers+ridShoppers)
		var soldOut, busy, unknown atomic.Int64
		buy := func(i, u int, rid string) {
			body := map[string]any{"sku_id": sku, "qty": 1}
			if rid != "" {
				body["request_id"] = rid
			}
			for {
				r := s.do(i, "POST", "/api/v1/orders", fmt.Sprintf("r%d-s%d", run, u), body)
				switch {
				case r.Status == http.StatusServiceUnavailable && r.Str("error") == "busy":
					busy.Add(1)
					time.Sleep(50 * time.Millisecond)
					continue
				case r.Status == http.StatusServiceUnavailable && r.Str("error") == "unavailable":
					if !assert.NotEmpty(t, r.Str("request_id"), r.Raw) {
						return
					}
					unknown.Add(1)
					body["request_id"] = r.Str("request_id")
					time.Sleep(50 * time.Millisecond)
					continue
				case r.Status == http.StatusAccepted:
					got[u].Add(1)
				case r.Str("error") == "sold_out":
					soldOut.Add(1)
				default:
					assert.Equal(t, "limit_exceeded", r.Str("error"), r.Raw)
				}
				return
			}
		}
		var wg sync.WaitGroup
		for u := range shoppers {
			for i := range tries {
				wg.Go(func() { buy(i, u, "") })
			}
		}
		for u := shoppers; u < shoppers+ridShoppers; u++ {
			wg.Go(func() { buy(u, u, fmt.Sprintf("rid-%d", u)) })
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
			}
		}
		rep := s.drained(sku)
		t.Logf("run %d: %d shoppers short, %d sold_out answers, %d busy and %d unavailable answers retried, redis_left %d, sold %d",
			run, short, soldOut.Load(), busy.Load(), unknown.Load(), *rep.RedisLeft, rep.Sold)
		assert.Zero(t, short, "run %d: shoppers who got fewer than they asked for", run)
		assert.Zero(t, *rep.RedisLeft, "run %d: no unit stranded", run)
		assert.Zero(t, rep.InFlight, "run %d", run)
		assert.Equal(t, int64(units), rep.Sold, "run %d", run)
		requireBucketsConsistent(t, rep, 6)
		if t.Failed() {
			return
		}
	}
}
