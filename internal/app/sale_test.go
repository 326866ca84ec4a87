package app

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/sale"
	"github.com/seckill/seckill/internal/stock"
	"github.com/seckill/seckill/internal/testsvc"
)

// flashSale runs the classic case: stock units, buyers distinct shoppers at
// once, spread over the instances. Exactly stock orders are accepted and
// end up in SQL, each once, and the audit is clean.
func flashSale(t *testing.T, s *deployment, stock int64, buyers int) {
	t.Helper()
	flashSaleOf(t, s, s.seed(stock, 1), stock, buyers)
}

// flashSaleOf runs flashSale on sku, seeded with stock units and a limit
// of one.
func flashSaleOf(t *testing.T, s *deployment, sku uint64, stock int64, buyers int) sale.Report {
	t.Helper()
	var accepted, soldOut, busy atomic.Int64
	var mu sync.Mutex
	other := map[int]int{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < buyers; i++ {
		wg.Go(func() {
			<-start
			// A shopper told 503 comes back after Retry-After (here
			// shortened), with the same request id, as a real client does.
			r, tries := s.buyRetrying(i, sku, fmt.Sprintf("u%d", i), 1)
			busy.Add(int64(tries))
			switch {
			case r.Status == http.StatusAccepted:
				accepted.Add(1)
			case r.Status == http.StatusConflict && r.Str("error") == "sold_out":
				soldOut.Add(1)
			default:
				mu.Lock()
				other[r.Status]++
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	require.Empty(t, other, "unexpected answers")
	assert.Equal(t, stock, accepted.Load(), "accepted (sold out %d, busy %d)", soldOut.Load(), busy.Load())

	rep := s.drained(sku)
	assert.True(t, rep.Consistent, "%+v", rep)
	assert.Equal(t, stock, rep.Sold)
	assert.Equal(t, stock, rep.Orders)
	assert.Equal(t, stock, rep.PendingPayment)
	assert.Zero(t, rep.Duplicates)
	assert.Equal(t, int64(0), *rep.RedisLeft)

	var distinct int64
	require.NoError(t, s.apps[0].DB.Raw("SELECT COUNT(DISTINCT user_id) FROM orders WHERE sku_id = ?", sku).Scan(&distinct).Error)
	assert.Equal(t, stock, distinct, "no shopper twice")
	return rep
}

func TestFlashSale(t *testing.T) {
	for _, tc := range []struct {
		name      string
		instances int
		cluster   bool
		strategy  string
		batch     string
		sentinel  bool
		wait      string // redis.wait_replicas
	}{
		{"lock", 1, false, "lock", "64", false, ""},
		{"atomic", 1, false, "atomic", "64", false, ""},
		{"lock-uncombined", 1, false, "lock", "1", false, ""},
		{"lock-3-instances", 3, false, "lock", "64", false, ""},
		{"atomic-3-instances", 3, false, "atomic", "64", false, ""},
		{"lock-cluster-3-instances", 3, true, "lock", "64", false, ""},
		{"atomic-cluster-3-instances", 3, true, "atomic", "64", false, ""},
		// Replica-acknowledged buys and claims, on the Sentinel set and on
		// the Cluster (each master has a replica).
		{"lock-sentinel-wait-replica", 2, false, "lock", "64", true, "1"},
		{"atomic-cluster-wait-replica", 2, true, "atomic", "64", false, "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{
				"SECKILL_STOCK_STRATEGY":  tc.strategy,
				"SECKILL_STOCK_BATCH_MAX": tc.batch,
			}
			if tc.wait != "" {
				env["SECKILL_REDIS_WAIT_REPLICAS"] = tc.wait
				env["SECKILL_REDIS_WAIT_TIMEOUT"] = "500ms" // a loaded machine's replica lags
			}
			s := startSale(t, saleOpts{instances: tc.instances, cluster: tc.cluster, sentinel: tc.sentinel, env: env})
			flashSale(t, s, 10, 2000)
		})
	}
}

func TestFlashSaleEmbedded(t *testing.T) {
	s := startSale(t, saleOpts{embedded: true})
	flashSale(t, s, 10, 500)
}

func TestPerUserLimitAndQty(t *testing.T) {
	onBackends(t, saleOpts{}, func(t *testing.T, s *deployment) {
		sku := s.seed(10, 2)
		r := s.buy(0, sku, "alice", 3)
		assert.Equal(t, http.StatusConflict, r.Status, r.Raw)
		assert.Equal(t, "limit_exceeded", r.Str("error"))
		require.Equal(t, http.StatusAccepted, s.buy(0, sku, "alice", 2).Status)
		r = s.buy(0, sku, "alice", 1)
		assert.Equal(t, http.StatusConflict, r.Status)
		assert.Equal(t, "limit_exceeded", r.Str("error"))
		require.Equal(t, http.StatusAccepted, s.buy(0, sku, "bob", 1).Status)
		rep := s.drained(sku)
		assert.Equal(t, int64(3), rep.Sold)
		assert.Equal(t, int64(7), *rep.RedisLeft)
	})
}

func TestSaleWindow(t *testing.T) {
	onBackends(t, saleOpts{}, func(t *testing.T, s *deployment) {
		now := time.Now().UTC()
		for _, tc := range []struct {
			start, end time.Duration
			code       string
			state      string
		}{
			{time.Hour, 2 * time.Hour, "sale_not_started", "upcoming"},
			{-2 * time.Hour, -time.Hour, "sale_ended", "ended"},
		} {
			r := s.do(0, "POST", "/admin/skus", "", map[string]any{
				"name": "x", "price_cents": 1, "stock": 5, "per_user_limit": 1,
				"starts_at": now.Add(tc.start), "ends_at": now.Add(tc.end),
			})
			require.Equal(t, http.StatusCreated, r.Status, r.Raw)
			sku := uint64(r.Num("id"))
			b := s.buy(0, sku, "alice", 1)
			assert.Equal(t, http.StatusForbidden, b.Status, b.Raw)
			assert.Equal(t, tc.code, b.Str("error"))
			g := s.do(0, "GET", fmt.Sprintf("/api/v1/skus/%d", sku), "", nil)
			assert.Equal(t, tc.state, g.Str("state"))
			assert.Equal(t, int64(5), g.Num("stock_left"))
		}
	})
}

func TestIdempotentRequestID(t *testing.T) {
	onBackends(t, saleOpts{instances: 2}, func(t *testing.T, s *deployment) {
		sku := s.seed(10, 5)
		body := map[string]any{"sku_id": sku, "qty": 1, "request_id": "retry-1"}
		first := s.do(0, "POST", "/api/v1/orders", "alice", body)
		require.Equal(t, http.StatusAccepted, first.Status, first.Raw)
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				r := s.do(i, "POST", "/api/v1/orders", "alice", body)
				assert.Equal(t, http.StatusAccepted, r.Status, r.Raw)
				assert.Equal(t, first.Str("order_id"), r.Str("order_id"))
			})
		}
		wg.Wait()
		// The same request id of another shopper is another order.
		other := s.do(0, "POST", "/api/v1/orders", "bob", body)
		require.Equal(t, http.StatusAccepted, other.Status)
		assert.NotEqual(t, first.Str("order_id"), other.Str("order_id"))
		rep := s.drained(sku)
		assert.Equal(t, int64(2), rep.Sold)
	})
}

func TestOrderLifecycle(t *testing.T) {
	onBackends(t, saleOpts{}, func(t *testing.T, s *deployment) {
		sku := s.seed(1, 1)
		placed := s.buy(0, sku, "alice", 1)
		require.Equal(t, http.StatusAccepted, placed.Status)
		id := placed.Str("order_id")

		// Only the owner sees the order.
		assert.Equal(t, http.StatusNotFound, s.do(0, "GET", "/api/v1/orders/"+id, "mallory", nil).Status)
		assert.Equal(t, http.StatusNotFound, s.do(0, "POST", "/api/v1/orders/"+id+"/pay", "mallory", nil).Status)

		got := s.waitStatus("alice", id, "pending_payment")
		assert.Equal(t, float64(sku), got.Body["sku_id"])
		assert.Equal(t, float64(99900), got.Body["price_cents"])

		// Cancel returns the unit: sold out, then buyable again.
		assert.Equal(t, "sold_out", s.buy(0, sku, "bob", 1).Str("error"))
		c := s.do(0, "POST", "/api/v1/orders/"+id+"/cancel", "alice", nil)
		require.Equal(t, http.StatusOK, c.Status, c.Raw)
		assert.Equal(t, "cancelled", c.Str("status"))
		again := s.do(0, "POST", "/api/v1/orders/"+id+"/cancel", "alice", nil)
		assert.Equal(t, http.StatusOK, again.Status, "cancel is idempotent")
		assert.Equal(t, http.StatusConflict, s.do(0, "POST", "/api/v1/orders/"+id+"/pay", "alice", nil).Status)

		rebuy := s.buy(0, sku, "bob", 1)
		require.Equal(t, http.StatusAccepted, rebuy.Status, "the returned unit sells again: %s", rebuy.Raw)
		bid := rebuy.Str("order_id")
		s.waitStatus("bob", bid, "pending_payment")
		p := s.do(0, "POST", "/api/v1/orders/"+bid+"/pay", "bob", nil)
		require.Equal(t, http.StatusOK, p.Status, p.Raw)
		assert.Equal(t, "paid", p.Str("status"))
		assert.Equal(t, http.StatusOK, s.do(0, "POST", "/api/v1/orders/"+bid+"/pay", "bob", nil).Status, "pay is idempotent")
		cp := s.do(0, "POST", "/api/v1/orders/"+bid+"/cancel", "bob", nil)
		assert.Equal(t, http.StatusConflict, cp.Status)
		assert.Equal(t, "order_paid", cp.Str("error"))

		rep := s.drained(sku)
		assert.Equal(t, int64(1), rep.Sold)
		assert.Equal(t, int64(1), rep.Paid)
		assert.Equal(t, int64(1), rep.Cancelled)
	})
}

func TestUnpaidOrdersExpireOnce(t *testing.T) {
	onBackends(t, saleOpts{instances: 2, env: map[string]string{"SECKILL_ORDER_PAYMENT_TIMEOUT": "1s"}}, func(t *testing.T, s *deployment) {
		sku := s.seed(3, 1)
		var ids []string
		for _, u := range []string{"a", "b", "c"} {
			ids = append(ids, s.order(0, sku, u))
		}
		s.waitStatus("a", ids[0], "expired")
		s.waitStatus("b", ids[1], "expired")
		s.waitStatus("c", ids[2], "expired")
		rep := s.drained(sku)
		assert.Equal(t, int64(0), rep.Sold)
		assert.Equal(t, int64(3), rep.Expired)
		assert.Equal(t, int64(3), *rep.RedisLeft, "each unit returned exactly once")
		// A late payment is refused.
		r := s.do(0, "POST", "/api/v1/orders/"+ids[0]+"/pay", "a", nil)
		assert.Equal(t, http.StatusConflict, r.Status)
		assert.Equal(t, "order_closed", r.Str("error"))
	})
}

func TestPayRacesExpiry(t *testing.T) {
	onBackends(t, saleOpts{env: map[string]string{"SECKILL_ORDER_PAYMENT_TIMEOUT": "1s"}}, func(t *testing.T, s *deployment) {
		const n = 40
		sku := s.seed(n, 1)
		ids := make([]string, n)
		for i := range n {
			ids[i] = s.order(0, sku, fmt.Sprintf("u%d", i))
		}
		for i := range n {
			// In SQL: pending, or already expired on a slow machine (then
			// its payment below is refused, as the audit expects).
			require.Eventually(t, func() bool {
				r := s.do(0, "GET", "/api/v1/orders/"+ids[i], fmt.Sprintf("u%d", i), nil)
				return r.Str("status") == "pending_payment" || r.Str("status") == "expired"
			}, 30*time.Second, 50*time.Millisecond, "order %s never persisted", ids[i])
		}
		// Pay every order around its deadline while the expiry fires.
		var paid atomic.Int64
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				time.Sleep(time.Duration(800+10*i) * time.Millisecond)
				r := s.do(0, "POST", "/api/v1/orders/"+ids[i]+"/pay", fmt.Sprintf("u%d", i), nil)
				switch r.Status {
				case http.StatusOK:
					paid.Add(1)
				case http.StatusConflict:
				default:
					t.Errorf("pay: %d %s", r.Status, r.Raw)
				}
			})
		}
		wg.Wait()
		deadline := time.Now().Add(20 * time.Second)
		var rep = s.audit(sku)
		for rep.PendingPayment > 0 && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
			rep = s.audit(sku)
		}
		assert.True(t, rep.Consistent, "%+v", rep)
		assert.Equal(t, paid.Load(), rep.Paid, "every 200 paid is a paid order")
		assert.Equal(t, int64(n)-paid.Load(), rep.Expired)
		assert.Equal(t, paid.Load(), rep.Sold)
		assert.Equal(t, int64(n)-paid.Load(), *rep.RedisLeft)
	})
}

func TestRedisWipedMidSale(t *testing.T) {
	onBackends(t, saleOpts{instances: 2}, func(t *testing.T, s *deployment) {
		const stock = 200
		sku := s.seed(stock, 1)
		var accepted atomic.Int64
		var wg sync.WaitGroup
		buyers := 1500
		for i := range buyers {
			wg.Go(func() {
				if i == buyers/3 {
					// Redis loses everything of this deployment.
					wipe(t, s)
				}
				r := s.buy(i, sku, fmt.Sprintf("u%d", i), 1)
				switch r.Status {
				case http.StatusAccepted:
					accepted.Add(1)
				case http.StatusConflict, http.StatusServiceUnavailable:
				default:
					t.Errorf("buy: %d %s", r.Status, r.Raw)
				}
			})
		}
		wg.Wait()
		time.Sleep(500 * time.Millisecond)
		var sold, orders int64
		db := s.apps[0].DB
		require.NoError(t, db.Raw("SELECT sold FROM skus WHERE id = ?", sku).Scan(&sold).Error)
		require.NoError(t, db.Raw("SELECT COUNT(*) FROM orders WHERE sku_id = ?", sku).Scan(&orders).Error)
		assert.LessOrEqual(t, sold, int64(stock), "SQL is never oversold")
		t.Logf("accepted %d, persisted %d, sold %d (orders queued at the wipe are gone with Redis)", accepted.Load(), orders, sold)

		r := s.do(0, "POST", fmt.Sprintf("/admin/skus/%d/reconcile", sku), "", nil)
		require.Equal(t, http.StatusOK, r.Status, r.Raw)
		rep := s.drained(sku)
		assert.True(t, rep.Consistent, "%+v", rep)
		assert.LessOrEqual(t, rep.Sold, int64(stock))
		assert.Equal(t, int64(stock)-rep.Sold, *rep.RedisLeft)
	})
}

// wipe deletes every Redis key of the deployment, as a Redis restarted
// without persistence would.
func wipe(t *testing.T, s *deployment) {
	t.Helper()
	if err := testsvc.DeleteKeys(s.apps[0].Redis, s.env["SECKILL_REDIS_KEY_PREFIX"]); err != nil {
		t.Errorf("wipe: %v", err)
	}
}

// TestDeadlinesPerSecondOfOrders: the payment deadlines of a crowd's orders
// are a few tasks (one per drained batch and second of expiry), not one per
// order, and still
// expire exactly the orders left unpaid, each once.
func TestDeadlinesPerSecondOfOrders(t *testing.T) {
	// Long enough that paying half of them, one by one, ends before the
	// first deadline on a loaded machine.
	s := startSale(t, saleOpts{env: map[string]string{"SECKILL_ORDER_PAYMENT_TIMEOUT": "10s"}})
	const n = 200
	sku := s.seed(n, 1)
	ids := make([]string, n)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r := s.buy(i, sku, fmt.Sprintf("u%d", i), 1)
			assert.Equal(t, http.StatusAccepted, r.Status, r.Raw)
			ids[i] = r.Str("order_id")
		})
	}
	wg.Wait()
	spread := time.Since(start)
	s.drained(sku)
	ready := s.env["SECKILL_REDIS_KEY_PREFIX"] + stock.Tag(sku) + ":q:ready"
	tasks, err := s.apps[0].Redis.ZRange(t.Context(), ready, 0, -1).Result()
	require.NoError(t, err)
	// One per drained batch and second of expiry: a handful, where each
	// order used to have its own.
	assert.LessOrEqual(t, len(tasks), n/10, "deadline tasks for %d orders placed within %s: %v", n, spread, tasks)

	// Half of them paid, eight at a time. On a slow machine some may reach
	// their deadline first: closed then, never before.
	var paid atomic.Int64
	sem := make(chan struct{}, 8)
	for i := 0; i < n; i += 2 {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			r := s.do(i, "POST", "/api/v1/orders/"+ids[i]+"/pay", fmt.Sprintf("u%d", i), nil)
			if r.Status == http.StatusConflict && r.Str("error") == "order_closed" {
				assert.GreaterOrEqual(t, time.Since(start), 10*time.Second, "closed before its deadline: %s", ids[i])
				return
			}
			if assert.Equal(t, http.StatusOK, r.Status, r.Raw) {
				paid.Add(1)
			}
		})
	}
	wg.Wait()
	assert.Positive(t, paid.Load(), "no payment before the deadlines")
	deadline := time.Now().Add(60 * time.Second)
	rep := s.audit(sku)
	for rep.PendingPayment > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		rep = s.audit(sku)
	}
	assert.True(t, rep.Consistent, "%+v", rep)
	assert.Equal(t, paid.Load(), rep.Paid)
	assert.Equal(t, n-paid.Load(), rep.Expired)
	assert.Equal(t, n-paid.Load(), *rep.RedisLeft, "each unpaid order's unit returned once")
}

// A shopper over the limit is told the same, whether the qty alone is over
// it or the units they hold already are.
func TestTheLimitIsExplainedTheSameWay(t *testing.T) {
	s := startSale(t, saleOpts{})
	sku := s.seed(10, 2)
	require.Equal(t, http.StatusAccepted, s.buy(0, sku, "lee", 2).Status)
	held := s.buy(0, sku, "lee", 1)
	tooMany := s.buy(0, sku, "kim", 3)
	assert.Equal(t, "limit_exceeded", held.Str("error"), held.Raw)
	assert.Equal(t, "limit_exceeded", tooMany.Str("error"), tooMany.Raw)
	assert.Equal(t, "per-user limit exceeded: at most 2 per shopper", held.Str("detail"))
	assert.Equal(t, held.Str("detail"), tooMany.Str("detail"))
}
