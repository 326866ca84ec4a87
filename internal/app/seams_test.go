package app

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testutil"
)

// A shopper whose buy with a request id was accepted, and who retries it
// (their side timed out), gets their order back whatever the SKU's state
// now, on any instance.
func TestReplayOfAnAcceptedRequestWhateverTheSKUsState(t *testing.T) {
	onBackends(t, saleOpts{instances: 2}, func(t *testing.T, s *deployment) {
		sku := s.seed(1, 1)
		body := map[string]any{"sku_id": sku, "qty": 1, "request_id": "r-1"}
		first := s.do(0, "POST", "/api/v1/orders", "alice", body)
		require.Equal(t, http.StatusAccepted, first.Status, first.Raw)
		id := first.Str("order_id")

		// Sold out, and known so on every instance.
		for i := range 2 {
			r := s.buy(i, sku, fmt.Sprintf("late-%d", i), 1)
			require.Equal(t, "sold_out", r.Str("error"), r.Raw)
		}
		for i := range 4 {
			r := s.do(i, "POST", "/api/v1/orders", "alice", body)
			require.Equal(t, http.StatusAccepted, r.Status, "after sell-out: %s", r.Raw)
			assert.Equal(t, id, r.Str("order_id"))
		}
		// Over the limit: qty 2 with limit 1 is refused before Redis.
		over := map[string]any{"sku_id": sku, "qty": 2, "request_id": "r-1"}
		r := s.do(1, "POST", "/api/v1/orders", "alice", over)
		require.Equal(t, http.StatusAccepted, r.Status, "over the limit: %s", r.Raw)
		assert.Equal(t, id, r.Str("order_id"))

		// After the sale ended.
		now := time.Now().UTC()
		end := s.do(0, "POST", "/admin/skus", "", map[string]any{
			"id": sku, "name": "Phone", "price_cents": 99900, "stock": 1, "per_user_limit": 1,
			"starts_at": now.Add(-time.Hour), "ends_at": now.Add(-time.Second),
		})
		require.Less(t, end.Status, 300, end.Raw)
		time.Sleep(2500 * time.Millisecond) // the catalog cache's TTL on the other instance
		for i := range 2 {
			r := s.do(i, "POST", "/api/v1/orders", "alice", body)
			require.Equal(t, http.StatusAccepted, r.Status, "after the end: %s", r.Raw)
			assert.Equal(t, id, r.Str("order_id"))
			// Refused as ended or, by an instance whose catalog cache has
			// not refreshed yet, as sold out.
			assert.Contains(t, []string{"sale_ended", "sold_out"}, s.buy(i, sku, "bob", 1).Str("error"))
		}
		rep := s.drained(sku)
		assert.Equal(t, int64(1), rep.Orders)
	})
}

// Two shoppers whose ids differ only in where a ':' falls must not share a
// request id key: each gets an order of their own.
func TestRequestIDsOfDifferentShoppersNeverCollide(t *testing.T) {
	s := startSale(t, saleOpts{})
	sku := s.seed(10, 1)
	a := s.do(0, "POST", "/api/v1/orders", "a:b", map[string]any{"sku_id": sku, "qty": 1, "request_id": "c"})
	require.Equal(t, http.StatusAccepted, a.Status, a.Raw)
	b := s.do(0, "POST", "/api/v1/orders", "a", map[string]any{"sku_id": sku, "qty": 1, "request_id": "b:c"})
	require.Equal(t, http.StatusAccepted, b.Status, b.Raw)
	assert.NotEqual(t, a.Str("order_id"), b.Str("order_id"))
	g := s.do(0, "GET", "/api/v1/orders/"+b.Str("order_id"), "a", nil)
	assert.Equal(t, http.StatusOK, g.Status, "the order is the second shopper's own: %s", g.Raw)
	assert.Equal(t, int64(2), s.drained(sku).Sold)
}

// A cancelled order cancelled again after Redis lost its data and the SKU
// was rebuilt from SQL gives nothing back a second time.
func TestCancelAgainAfterRedisLostItsData(t *testing.T) {
	onBackends(t, saleOpts{}, func(t *testing.T, s *deployment) {
		sku := s.seed(5, 1)
		first := s.buy(0, sku, "alice", 1)
		require.Equal(t, http.StatusAccepted, first.Status, first.Raw)
		id := first.Str("order_id")
		s.waitStatus("alice", id, "pending_payment")
		c := s.do(0, "POST", "/api/v1/orders/"+id+"/cancel", "alice", nil)
		require.Equal(t, http.StatusOK, c.Status, c.Raw)
		for _, u := range []string{"bob", "carol"} {
			r := s.buy(0, sku, u, 1)
			require.Equal(t, http.StatusAccepted, r.Status, r.Raw)
		}
		s.drained(sku)

		wipe(t, s)
		r := s.do(0, "POST", fmt.Sprintf("/admin/skus/%d/reconcile", sku), "", nil)
		require.Equal(t, http.StatusOK, r.Status, r.Raw)

		again := s.do(0, "POST", "/api/v1/orders/"+id+"/cancel", "alice", nil)
		require.Equal(t, http.StatusOK, again.Status, again.Raw)
		rep := s.audit(sku)
		assert.True(t, rep.Consistent, "%+v", rep)
		require.NotNil(t, rep.RedisLeft)
		assert.Equal(t, int64(3), *rep.RedisLeft, "the cancelled unit was given back once")
		assert.Equal(t, int64(2), rep.Sold)

		// Every unit left sells, and not one more.
		sold := 0
		for i := range 6 {
			if s.buy(0, sku, fmt.Sprintf("n%d", i), 1).Status == http.StatusAccepted {
				sold++
			}
		}
		assert.Equal(t, 3, sold)
		rep = s.drained(sku)
		assert.Equal(t, int64(5), rep.Sold)
		assert.Equal(t, int64(0), rep.Failed)
	})
}

// Seeding a SKU again after Redis lost its data rebuilds it from SQL: its
// past buyers stay at their limit and sold units are not sold again.
func TestSeedAgainAfterRedisLostItsDataRebuildsFromSQL(t *testing.T) {
	onBackends(t, saleOpts{}, func(t *testing.T, s *deployment) {
		now := time.Now().UTC()
		spec := map[string]any{"name": "Phone", "price_cents": 99900, "stock": 3, "per_user_limit": 1,
			"starts_at": now.Add(-time.Minute), "ends_at": now.Add(time.Hour)}
		r := s.do(0, "POST", "/admin/skus", "", spec)
		require.Equal(t, http.StatusCreated, r.Status, r.Raw)
		sku := uint64(r.Num("id"))
		for _, u := range []string{"alice", "bob"} {
			require.Equal(t, http.StatusAccepted, s.buy(0, sku, u, 1).Status)
		}
		s.drained(sku)

		wipe(t, s)
		spec["id"] = sku
		again := s.do(0, "POST", "/admin/skus", "", spec)
		require.Less(t, again.Status, 300, again.Raw)
		assert.Equal(t, int64(1), again.Num("stock_left"), again.Raw)

		assert.Equal(t, "limit_exceeded", s.buy(0, sku, "alice", 1).Str("error"), "a past buyer stays at the limit")
		require.Equal(t, http.StatusAccepted, s.buy(0, sku, "carol", 1).Status)
		assert.Equal(t, "sold_out", s.buy(0, sku, "dave", 1).Str("error"))
		rep := s.drained(sku)
		assert.Equal(t, int64(3), rep.Sold)
		assert.Equal(t, int64(0), rep.Failed)
	})
}

// A cancel racing a payment that won answers order_paid, never
// order_closed: the payment commits between the cancel's read of the order
// and its update.
func TestCancelRacingPayAnswersPaid(t *testing.T) {
	s := startSale(t, saleOpts{})
	sku := s.seed(1, 1)
	id := s.order(0, sku, "alice")
	s.waitStatus("alice", id, "pending_payment")

	db := s.apps[0].DB
	var once sync.Once
	require.NoError(t, db.Callback().Update().Before("gorm:update").Register("test:pay-first", func(tx *gorm.DB) {
		if m, ok := tx.Statement.Dest.(map[string]any); ok && m["status"] == "cancelled" {
			once.Do(func() {
				// Another connection: the shopper's payment commits now.
				err := db.Session(&gorm.Session{NewDB: true}).Exec(
					"UPDATE orders SET status = 'paid', paid_at = ?, updated_at = ? WHERE order_id = ?",
					time.Now().UTC(), time.Now().UTC(), id).Error
				assert.NoError(t, err)
			})
		}
	}))
	t.Cleanup(func() { _ = db.Callback().Update().Remove("test:pay-first") })

	c := s.do(0, "POST", "/api/v1/orders/"+id+"/cancel", "alice", nil)
	assert.Equal(t, http.StatusConflict, c.Status, c.Raw)
	assert.Equal(t, "order_paid", c.Str("error"), c.Raw)
	rep := s.drained(sku)
	assert.Equal(t, int64(1), rep.Paid)
	assert.Equal(t, int64(1), rep.Sold)
}

// A pay whose update looks for the order before the drain writes it to SQL,
// and whose read of the order comes after, pays it: the order is pending
// before its deadline, not closed (it was answered order_closed, and then
// expired).
func TestPayOfAnOrderWrittenMeanwhilePaysIt(t *testing.T) {
	// Instance 0 serves the API only, and nothing else uses its SQL
	// handle while the callbacks below are registered; instance 1 drains.
	s := startSale(t, saleOpts{noWorkers: true})
	sku := s.seed(1, 1)

	// The row leaves SQL just before the pay's update and is back before
	// the pay reads the order: as if the drain wrote it between the two.
	db := s.apps[0].DB
	other := db.Session(&gorm.Session{NewDB: true})
	hold := "hold_" + testsvc.RandomID(8)
	isPay := func(tx *gorm.DB) bool {
		m, ok := tx.Statement.Dest.(map[string]any)
		return ok && m["status"] == "paid"
	}
	var id string
	var moved, missed atomic.Bool
	var back sync.Once
	cbs := db.Callback()
	require.NoError(t, cbs.Update().Before("gorm:update").Register("test:not-yet", func(tx *gorm.DB) {
		if isPay(tx) && !moved.Swap(true) {
			// Not CREATE TABLE … SELECT, which TiDB does not implement.
			assert.NoError(t, other.Exec("CREATE TABLE "+hold+" LIKE orders").Error)
			assert.NoError(t, other.Exec("INSERT INTO "+hold+" SELECT * FROM orders WHERE order_id = ?", id).Error)
			assert.NoError(t, other.Exec("DELETE FROM orders WHERE order_id = ?", id).Error)
		}
	}))
	require.NoError(t, cbs.Update().After("gorm:update").Register("test:missed", func(tx *gorm.DB) {
		if isPay(tx) && tx.Statement.RowsAffected == 0 {
			missed.Store(true)
		}
	}))
	require.NoError(t, cbs.Query().Before("gorm:query").Register("test:written", func(*gorm.DB) {
		if missed.Load() {
			back.Do(func() {
				assert.NoError(t, other.Exec("INSERT INTO orders SELECT * FROM "+hold).Error)
				assert.NoError(t, other.Exec("DROP TABLE "+hold).Error)
			})
		}
	}))
	id = s.order(0, sku, "alice")
	s.workers = true
	s.start()
	s.waitStatus("alice", id, "pending_payment")

	p := s.do(0, "POST", "/api/v1/orders/"+id+"/pay", "alice", nil)
	require.True(t, missed.Load(), "the pay's update missed the order")
	assert.Equal(t, http.StatusOK, p.Status, p.Raw)
	assert.Equal(t, "paid", p.Str("status"), p.Raw)
	rep := s.drained(sku)
	assert.Equal(t, int64(1), rep.Paid)
}

// When the rebuild after a stock-guard refusal cannot run at once (another
// rebuild holds the SKU), the drain runs it when it retries: the failed
// order's units and its shopper's limit do not stay taken in Redis.
func TestRebuildAfterAGuardRefusalIsRetriedUntilItRuns(t *testing.T) {
	s := startSale(t, saleOpts{noWorkers: true})
	sku := s.seed(3, 1)
	for _, u := range []string{"alice", "bob", "carol"} {
		require.Equal(t, http.StatusAccepted, s.buy(0, sku, u, 1).Status)
	}
	// SQL has one unit fewer than Redis sold: carol's order will be refused.
	require.NoError(t, s.apps[0].DB.Exec("UPDATE skus SET stock_total = 2 WHERE id = ?", sku).Error)
	// A rebuild in progress elsewhere: the drain's own must wait for it.
	ctx := t.Context()
	paused := fmt.Sprintf("%s{sku:%d}:paused", s.env["SECKILL_REDIS_KEY_PREFIX"], sku)
	require.NoError(t, s.apps[0].Redis.Set(ctx, paused, "elsewhere", 2*time.Second).Err())

	s.workers = true
	s.start()
	deadline := time.Now().Add(30 * time.Second)
	for {
		rep := s.audit(sku)
		if rep.QueuedOrders == 0 && rep.Consistent && rep.Failed == 1 {
			break
		}
		require.True(t, time.Now().Before(deadline), "never consistent: %+v", rep)
		time.Sleep(100 * time.Millisecond)
	}
	// Once the marker is gone the drain's retry rebuilds the SKU: Redis's
	// total comes down to SQL's.
	stockKey := fmt.Sprintf("%s{sku:%d}:stock", s.env["SECKILL_REDIS_KEY_PREFIX"], sku)
	for s.apps[0].Redis.HGet(ctx, stockKey, "total").Val() != "2" {
		require.True(t, time.Now().Before(deadline), "never rebuilt")
		time.Sleep(100 * time.Millisecond)
	}
	top := s.do(0, "PUT", fmt.Sprintf("/admin/skus/%d/stock", sku), "", map[string]any{"stock_total": 3})
	require.Equal(t, http.StatusOK, top.Status, top.Raw)
	assert.Equal(t, int64(1), top.Num("stock_left"), top.Raw)
	r := s.buy(0, sku, "carol", 1)
	assert.Equal(t, http.StatusAccepted, r.Status, "the refused order does not count against its shopper: %s", r.Raw)
	rep := s.drained(sku)
	assert.Equal(t, int64(3), rep.Sold)
}

// queueOrders has n distinct shoppers buy one unit each of sku on an
// instance without workers, so every order stays queued.
func queueOrders(t *testing.T, s *deployment, sku uint64, n int) {
	t.Helper()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			r, _ := s.buyRetrying(0, sku, fmt.Sprintf("q%d", i), 1)
			assert.Equal(t, http.StatusAccepted, r.Status, r.Raw)
		})
	}
	wg.Wait()
}

// A rebuild while workers drain the queue counts every queued order once:
// the queue is read in one step, not page by page while tasks move.
func TestRebuildWhileTheDrainRunsCountsEveryQueuedOrder(t *testing.T) {
	s := startSale(t, saleOpts{noWorkers: true, env: map[string]string{"SECKILL_WORKER_BATCH_SIZE": "50"}})
	const n = 2500
	sku := s.seed(n+100, 1)
	queueOrders(t, s, sku, n)

	s.workers = true
	s.start()
	for {
		r := s.do(0, "POST", fmt.Sprintf("/admin/skus/%d/reconcile", sku), "", nil)
		require.Contains(t, []int{http.StatusOK, http.StatusServiceUnavailable}, r.Status, r.Raw)
		rep := s.audit(sku)
		if rep.QueuedOrders == 0 {
			break
		}
	}
	rep := s.drained(sku)
	assert.Equal(t, int64(n), rep.Sold)
	assert.Equal(t, int64(100), *rep.RedisLeft)
}

// A stock cut below the units Redis has taken is refused before SQL is
// touched: batches the drain commits meanwhile are never refused by SQL's
// guard.
func TestStockCutsRacingTheDrainFailNoOrder(t *testing.T) {
	s := startSale(t, saleOpts{noWorkers: true, env: map[string]string{"SECKILL_WORKER_BATCH_SIZE": "20"}})
	const n = 1500
	sku := s.seed(n, 1)
	queueOrders(t, s, sku, n)

	s.workers = true
	s.start()
	db := s.apps[0].DB
	for {
		var sold int64
		require.NoError(t, db.Raw("SELECT sold FROM skus WHERE id = ?", sku).Scan(&sold).Error)
		if sold >= n-1 {
			// sold+1 would be all Redis has taken: a cut to it is allowed.
			break
		}
		// Above what SQL has sold, below what Redis has taken: refused.
		r := s.do(0, "PUT", fmt.Sprintf("/admin/skus/%d/stock", sku), "", map[string]any{"stock_total": sold + 1})
		require.Equal(t, http.StatusConflict, r.Status, r.Raw)
	}
	rep := s.drained(sku)
	assert.Equal(t, int64(0), rep.Failed)
	assert.Equal(t, int64(n), rep.Sold)
	assert.Equal(t, int64(n), rep.Stock)
}

// A cancel that lands while the SKU is being rebuilt waits for the rebuild
// instead of changing Redis under it (the rebuild would overwrite or count
// it again), then gives the units back once.
func TestCancelWaitsOutARebuildInProgress(t *testing.T) {
	s := startSale(t, saleOpts{})
	sku := s.seed(2, 1)
	id := s.order(0, sku, "alice")
	s.waitStatus("alice", id, "pending_payment")

	ctx := t.Context()
	prefix := s.env["SECKILL_REDIS_KEY_PREFIX"]
	stockKey := fmt.Sprintf("%s{sku:%d}:stock", prefix, sku)
	paused := fmt.Sprintf("%s{sku:%d}:paused", prefix, sku)
	require.NoError(t, s.apps[0].Redis.Set(ctx, paused, "elsewhere", 1500*time.Millisecond).Err())
	done := make(chan testutil.Reply, 1)
	go func() { done <- s.do(0, "POST", "/api/v1/orders/"+id+"/cancel", "alice", nil) }()
	time.Sleep(500 * time.Millisecond)
	assert.Equal(t, "1", s.apps[0].Redis.HGet(ctx, stockKey, "left").Val(), "nothing given back while paused")
	c := <-done
	require.Equal(t, http.StatusOK, c.Status, c.Raw)
	assert.Equal(t, "2", s.apps[0].Redis.HGet(ctx, stockKey, "left").Val())
	assert.True(t, s.drained(sku).Consistent)
}

// What a shopper can name costs no memory that stays: reading, paying and
// cancelling made-up order ids of made-up SKUs keeps no queue, and a sale's
// Redis state has an expiry.
func TestMadeUpOrderIDsKeepNothingAndSaleStateExpires(t *testing.T) {
	s := startSale(t, saleOpts{noWorkers: true})
	sku := s.seed(5, 1)
	for i := range 200 {
		id := fmt.Sprintf("%d-06h0f3vdzt7hjp3xe169e7mc", 1_000_000+i)
		for _, p := range []string{"", "/pay", "/cancel"} {
			method := "POST"
			if p == "" {
				method = "GET"
			}
			r := s.do(0, method, "/api/v1/orders/"+id+p, "mallory", nil)
			require.Equal(t, http.StatusNotFound, r.Status, r.Raw)
		}
	}
	assert.Equal(t, 0, s.apps[0].Stock.Kept(), "no queue kept for a made-up sku")

	r := s.buy(0, sku, "alice", 1)
	require.Equal(t, http.StatusAccepted, r.Status)
	ctx := t.Context()
	prefix := s.env["SECKILL_REDIS_KEY_PREFIX"]
	for _, k := range []string{"stock", "buyers"} {
		ttl := s.apps[0].Redis.PTTL(ctx, fmt.Sprintf("%s{sku:%d}:%s", prefix, sku, k)).Val()
		assert.Greater(t, ttl, time.Hour, "%s expires after the sale", k)
		assert.Less(t, ttl, 3*24*time.Hour, "%s expires after the sale", k)
	}
}

// The drain stops consuming a sale that is over and drained, and drops its
// queue's metrics, so a process serving sale after sale stays bounded.
func TestDrainStopsConsumingAFinishedSale(t *testing.T) {
	s := startSale(t, saleOpts{env: map[string]string{"SECKILL_ORDER_PAYMENT_TIMEOUT": "1s"}})
	sku := s.seed(5, 1)
	r := s.buy(0, sku, "alice", 1)
	require.Equal(t, http.StatusAccepted, r.Status)
	s.waitStatus("alice", r.Str("order_id"), "expired")
	series := fmt.Sprintf(`queue="{sku:%d}"`, sku)
	require.Eventually(t, func() bool { return strings.Contains(s.do(0, "GET", "/metrics", "", nil).Raw, series) },
		10*time.Second, 100*time.Millisecond)

	// The sale ended more than its payment window and an hour ago.
	now := time.Now().UTC()
	end := s.do(0, "POST", "/admin/skus", "", map[string]any{
		"id": sku, "name": "Phone", "price_cents": 99900, "stock": 5, "per_user_limit": 1,
		"starts_at": now.Add(-3 * time.Hour), "ends_at": now.Add(-2 * time.Hour),
	})
	require.Less(t, end.Status, 300, end.Raw)
	require.Eventually(t, func() bool { return !strings.Contains(s.do(0, "GET", "/metrics", "", nil).Raw, series) },
		10*time.Second, 100*time.Millisecond, "the finished sale's queue is still consumed")
	assert.Equal(t, 0, s.apps[0].Stock.Kept())
}

// After Redis lost its data, and before the SKU is rebuilt, a retried
// request id whose order reached MySQL still gets that order.
func TestReplayAfterRedisLostItsDataBeforeTheRebuild(t *testing.T) {
	s := startSale(t, saleOpts{})
	sku := s.seed(1, 1)
	body := map[string]any{"sku_id": sku, "qty": 1, "request_id": "r-1"}
	first := s.do(0, "POST", "/api/v1/orders", "alice", body)
	require.Equal(t, http.StatusAccepted, first.Status, first.Raw)
	require.Equal(t, "sold_out", s.buy(0, sku, "bob", 1).Str("error"))
	s.drained(sku)
	wipe(t, s)
	for range 2 {
		r := s.do(0, "POST", "/api/v1/orders", "alice", body)
		require.Equal(t, http.StatusAccepted, r.Status, r.Raw)
		assert.Equal(t, first.Str("order_id"), r.Str("order_id"))
	}
}
