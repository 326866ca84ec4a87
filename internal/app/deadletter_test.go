package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/apitest"
	"github.com/seckill/seckill/internal/order"
	"github.com/seckill/seckill/internal/outbox"
	"github.com/seckill/seckill/internal/queue"
	"github.com/seckill/seckill/internal/stock"
	"github.com/seckill/seckill/internal/testutil"
)

// deadLetter buys one unit and fails its order task until it is a dead
// letter; it returns the task's id and the order's.
func deadLetter(t *testing.T, s *deployment, sku uint64, user string) (task, orderID string) {
	t.Helper()
	r := s.buy(0, sku, user, 1)
	require.Equal(t, http.StatusAccepted, r.Status, r.Raw)
	// In the queue of the bucket the order id names.
	q := s.apps[0].Stock.Queue(stock.PartOf(sku, r.Str("order_id")))
	ctx := t.Context()
	for {
		claimed, err := q.Claim(ctx, 10, time.Minute)
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		dead, err := q.Nack(ctx, claimed[0], errors.New("injected failure"))
		require.NoError(t, err)
		if dead {
			return claimed[0].ID, r.Str("order_id")
		}
		time.Sleep(5 * time.Millisecond) // past the retry back-off of attempt 1
	}
}

func TestDeadLettersAreKeptUntilAnOperatorActs(t *testing.T) {
	onBackends(t, saleOpts{noWorkers: true, env: map[string]string{"SECKILL_ORDER_MAX_ATTEMPTS": "1"}}, func(t *testing.T, s *deployment) {
		sku := s.seed(5, 1)
		kept, keptOrder := deadLetter(t, s, sku, "alice")
		dropped, _ := deadLetter(t, s, sku, "bob")

		rep := s.audit(sku)
		assert.False(t, rep.Consistent)
		assert.Equal(t, int64(2), rep.DeadLetters)
		assert.Equal(t, int64(3), *rep.RedisLeft)

		q := s.do(0, "GET", fmt.Sprintf("/admin/skus/%d/queue", sku), "", nil)
		require.Equal(t, http.StatusOK, q.Status, q.Raw)
		assert.Equal(t, int64(2), q.Num("dead"))

		list := s.do(0, "GET", fmt.Sprintf("/admin/skus/%d/dead", sku), "", nil)
		require.Equal(t, http.StatusOK, list.Status, list.Raw)
		dead, _ := list.Body["dead"].([]any)
		require.Len(t, dead, 2)
		first := dead[0].(map[string]any)
		assert.Equal(t, "order.create", first["type"])
		orders, _ := first["payload"].([]any)
		require.Len(t, orders, 1, "the task holds the orders of one buy")
		assert.Contains(t, first["last_error"], "injected failure")

		// Dropping an accepted order gives its unit back.
		r := s.do(0, "DELETE", fmt.Sprintf("/admin/skus/%d/dead/%s", sku, dropped), "", nil)
		require.Equal(t, http.StatusOK, r.Status, r.Raw)
		assert.Equal(t, http.StatusNotFound, s.do(0, "DELETE", fmt.Sprintf("/admin/skus/%d/dead/%s", sku, dropped), "", nil).Status)
		rep = s.audit(sku)
		assert.Equal(t, int64(4), *rep.RedisLeft)

		// Requeued, the other one is queued again and its shopper sees it.
		r = s.do(0, "POST", fmt.Sprintf("/admin/skus/%d/dead/%s/requeue", sku, kept), "", nil)
		require.Equal(t, http.StatusOK, r.Status, r.Raw)
		assert.Equal(t, "queued", s.do(0, "GET", "/api/v1/orders/"+keptOrder, "alice", nil).Str("status"))
		rep = s.audit(sku)
		assert.True(t, rep.Consistent, "%+v", rep)
		assert.Equal(t, int64(1), rep.Queued)

		assert.Equal(t, http.StatusNotFound, s.do(0, "POST", fmt.Sprintf("/admin/skus/%d/dead/nope/requeue", sku), "", nil).Status)
		assert.Equal(t, http.StatusBadRequest, s.do(0, "GET", fmt.Sprintf("/admin/skus/%d/dead?n=-1", sku), "", nil).Status)
	})
}

// Deleting a dead letter while another operator requeues it gives its units
// back at most once, and only when the order did not reach SQL.
func TestDeleteDeadRacingRequeueReturnsUnitsOnce(t *testing.T) {
	s := startSale(t, saleOpts{noWorkers: true, env: map[string]string{"SECKILL_ORDER_MAX_ATTEMPTS": "1"}})
	const n = 20
	sku := s.seed(n+1, 1)
	ids := make([]string, n)
	for i := range n {
		ids[i], _ = deadLetter(t, s, sku, fmt.Sprintf("u%d", i))
	}
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() { s.do(0, "POST", fmt.Sprintf("/admin/skus/%d/dead/%s/requeue", sku, id), "", nil) })
		wg.Go(func() { s.do(0, "DELETE", fmt.Sprintf("/admin/skus/%d/dead/%s", sku, id), "", nil) })
		wg.Go(func() { s.do(0, "DELETE", fmt.Sprintf("/admin/skus/%d/dead/%s", sku, id), "", nil) })
	}
	wg.Wait()
	rep := s.audit(sku)
	assert.True(t, rep.Consistent, "%+v", rep)
	assert.Equal(t, int64(n+1), *rep.RedisLeft+rep.Queued, "each unit is either back or queued, once")

	// A dead letter whose order is in SQL (written, then its ack was lost)
	// keeps its units when dropped.
	sku = s.seed(2, 1)
	last, lastOrder := deadLetter(t, s, sku, "written")
	q := s.apps[0].Stock.Queue(stock.Part{SKU: sku})
	in, err := q.Inspect(t.Context(), last)
	require.NoError(t, err)
	require.NoError(t, s.apps[0].DB.Exec(
		`INSERT INTO orders (order_id, sku_id, user_id, qty, price_cents, status, fence, created_at, persisted_at, expires_at, updated_at)
		 VALUES (?, ?, 'written', 1, 99900, 'pending_payment', 0, ?, ?, ?, ?)`,
		lastOrder, sku, in.EnqueuedAt.UTC(), time.Now().UTC(), time.Now().Add(time.Hour).UTC(), time.Now().UTC()).Error)
	require.NoError(t, s.apps[0].DB.Exec("UPDATE skus SET sold = sold + 1 WHERE id = ?", sku).Error)
	before := s.audit(sku)
	r := s.do(0, "DELETE", fmt.Sprintf("/admin/skus/%d/dead/%s", sku, last), "", nil)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	after := s.audit(sku)
	assert.Equal(t, *before.RedisLeft, *after.RedisLeft, "no unit of an order in SQL comes back")
	assert.True(t, after.Consistent, "%+v", after)
}

// beforeReturn is a go-redis hook that runs f once, in the caller's
// goroutine, just before the first unit-return script (return.lua: four
// keys, the third the returned set) is sent.
type beforeReturn struct {
	once sync.Once
	f    func()
}

func (h *beforeReturn) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *beforeReturn) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		a := cmd.Args()
		if len(a) > 6 && strings.HasPrefix(fmt.Sprint(a[0]), "eval") && fmt.Sprint(a[2]) == "4" && strings.HasSuffix(fmt.Sprint(a[5]), ":returned") {
			h.once.Do(h.f)
		}
		return next(ctx, cmd)
	}
}

func (h *beforeReturn) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A dead letter's delete and the return of its units are one step for a
// reconcile: an operator's reconcile on another instance that comes between
// the two would count the units as free (the task is gone, the order is
// not in SQL), and the return would then add them again, one unit too many
// on sale and the shopper's count one too low. The reconcile waits for the
// delete to finish instead.
func TestAReconcileDoesNotComeBetweenADeadLettersDeleteAndItsReturn(t *testing.T) {
	s := startSale(t, saleOpts{instances: 2, noWorkers: true, env: map[string]string{"SECKILL_ORDER_MAX_ATTEMPTS": "1"}})
	sku := s.seed(5, 2)
	task, _ := deadLetter(t, s, sku, "bob")
	require.Equal(t, http.StatusAccepted, s.buy(0, sku, "bob", 1).Status)
	require.Equal(t, http.StatusAccepted, s.buy(0, sku, "alice", 1).Status)

	reconcile := &http.Client{Timeout: 1500 * time.Millisecond, Transport: apitest.Transport(t, nil)}
	var during int
	s.apps[0].Redis.AddHook(&beforeReturn{f: func() {
		req, err := http.NewRequest("POST", fmt.Sprintf("%s/admin/skus/%d/reconcile", s.urls[1], sku), nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+adminToken)
		if resp, err := reconcile.Do(req); err == nil {
			during = resp.StatusCode
			resp.Body.Close()
		}
	}})
	r := s.do(0, "DELETE", fmt.Sprintf("/admin/skus/%d/dead/%s", sku, task), "", nil)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	assert.NotEqual(t, http.StatusOK, during, "the reconcile did not run between the delete and the return")

	rep := s.audit(sku)
	assert.True(t, rep.Consistent, "%+v", rep)
	assert.Equal(t, int64(3), *rep.RedisLeft, "bob's dropped unit came back once")
	assert.Equal(t, http.StatusAccepted, s.buy(1, sku, "bob", 1).Status, "bob holds one unit of two")
	assert.Equal(t, "limit_exceeded", s.buy(1, sku, "bob", 1).Str("error"))
}

// An operator whose client gives up on a dead letter's delete (a timeout,
// a closed tab) does not stop it half-way: once the letter is gone its
// units come back, or nothing would ever return them (the task that named
// the order is gone and the order is not in SQL).
func TestADeadLettersDeleteLeftByItsClientStillReturnsTheUnits(t *testing.T) {
	s := startSale(t, saleOpts{noWorkers: true, env: map[string]string{"SECKILL_ORDER_MAX_ATTEMPTS": "1"}})
	sku := s.seed(5, 1)
	task, _ := deadLetter(t, s, sku, "bob")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	s.apps[0].Redis.AddHook(&beforeReturn{f: func() {
		cancel()
		time.Sleep(200 * time.Millisecond) // the server sees the client gone
	}})
	req, err := http.NewRequestWithContext(ctx, "DELETE", fmt.Sprintf("%s/admin/skus/%d/dead/%s", s.urls[0], sku, task), nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	if resp, err := (&http.Client{Transport: apitest.Transport(t, nil)}).Do(req); err == nil {
		resp.Body.Close()
	}
	require.Eventually(t, func() bool {
		rep := s.audit(sku)
		return rep.Consistent && *rep.RedisLeft == 5
	}, 5*time.Second, 50*time.Millisecond, "bob's unit came back: %+v", s.audit(sku))
}

// failReturns is a go-redis hook that fails every unit-return script
// (return.lua, as beforeReturn finds it) with err.
type failReturns struct{ err error }

func (h failReturns) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h failReturns) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		a := cmd.Args()
		if len(a) > 6 && strings.HasPrefix(fmt.Sprint(a[0]), "eval") && fmt.Sprint(a[2]) == "4" && strings.HasSuffix(fmt.Sprint(a[5]), ":returned") {
			cmd.SetErr(h.err)
			return h.err
		}
		return next(ctx, cmd)
	}
}

func (h failReturns) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A dead letter deleted whose units then cannot be given back (the letter
// is gone, the return failed) is not left holding them: the SKU's state is
// rebuilt from SQL and the queues, which frees them.
func TestADeadLettersDeleteWhoseReturnFailsRebuildsTheSKU(t *testing.T) {
	s := startSale(t, saleOpts{noWorkers: true, env: map[string]string{"SECKILL_ORDER_MAX_ATTEMPTS": "1"}})
	sku := s.seed(5, 1)
	task, _ := deadLetter(t, s, sku, "bob")
	require.Equal(t, http.StatusAccepted, s.buy(0, sku, "alice", 1).Status)
	s.apps[0].Redis.AddHook(failReturns{err: errors.New("injected: return lost")})
	r := s.do(0, "DELETE", fmt.Sprintf("/admin/skus/%d/dead/%s", sku, task), "", nil)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	rep := s.audit(sku)
	assert.True(t, rep.Consistent, "%+v", rep)
	assert.Equal(t, int64(4), *rep.RedisLeft, "bob's unit is free again, alice's queued")
	assert.Equal(t, http.StatusNotFound, s.do(0, "DELETE", fmt.Sprintf("/admin/skus/%d/dead/%s", sku, task), "", nil).Status)
}

// The queue report counts orders waiting for the drain apart from the
// payment-deadline timers: after the orders are written to MySQL and paid,
// nothing waits, and the timers (which stay until due and then do
// nothing) show as deadlines.
func TestTheQueueReportSetsDeadlinesApart(t *testing.T) {
	s := startSale(t, saleOpts{})
	sku := s.seed(5, 1)
	var ids []string
	for i := range 3 {
		ids = append(ids, s.order(0, sku, fmt.Sprintf("p%d", i)))
	}
	for i, id := range ids {
		user := fmt.Sprintf("p%d", i)
		s.waitStatus(user, id, "pending_payment")
		r := s.do(0, "POST", "/api/v1/orders/"+id+"/pay", user, nil)
		require.Equal(t, http.StatusOK, r.Status, r.Raw)
	}
	q := s.do(0, "GET", fmt.Sprintf("/admin/skus/%d/queue", sku), "", nil)
	require.Equal(t, http.StatusOK, q.Status, q.Raw)
	assert.Zero(t, q.Num("due"), q.Raw)
	assert.Zero(t, q.Num("delayed"), "no order waits for the drain: %s", q.Raw)
	assert.Positive(t, q.Num("deadlines"), q.Raw)
	assert.Nil(t, q.Body["oldest_due"], q.Raw)
}

// GET /admin/skus/{id}/dead pages through every dead letter of a SKU,
// bucket after bucket, past the first 1,000 of a bucket too.
func TestDeadLettersPageFarIntoEveryBucket(t *testing.T) {
	s := startSale(t, saleOpts{noWorkers: true})
	sku := s.seedBuckets(5, 1, 2)
	ctx := t.Context()
	kill := func(bucket, n int) []string {
		q := s.apps[0].Stock.Queue(stock.Part{SKU: sku, Bucket: bucket})
		tasks := make([]queue.Task, n)
		ids := make([]string, n)
		for i := range tasks {
			ids[i] = fmt.Sprintf("paging-%d-%04d", bucket, i)
			tasks[i] = queue.Task{ID: ids[i], Type: "paging", Payload: []byte("{}"), MaxAttempts: 1}
		}
		_, err := q.EnqueueBatch(ctx, tasks)
		require.NoError(t, err)
		for left := n; left > 0; {
			claimed, err := q.Claim(ctx, 500, time.Minute)
			require.NoError(t, err)
			require.NotEmpty(t, claimed)
			for _, c := range claimed {
				dead, err := q.Nack(ctx, c, errors.New("injected"))
				require.NoError(t, err)
				require.True(t, dead)
			}
			left -= len(claimed)
		}
		return ids
	}
	first, second := kill(0, 1005), kill(1, 10)
	page := func(offset, n int) []string {
		r := s.do(0, "GET", fmt.Sprintf("/admin/skus/%d/dead?offset=%d&n=%d", sku, offset, n), "", nil)
		require.Equal(t, http.StatusOK, r.Status, r.Raw)
		var ids []string
		for _, d := range r.Body["dead"].([]any) {
			ids = append(ids, d.(map[string]any)["id"].(string))
		}
		return ids
	}
	assert.ElementsMatch(t, append(first[1000:], second[:5]...), page(1000, 10), "across the buckets, past 1,000")
	assert.ElementsMatch(t, second[2:], page(1007, 100), "in the second bucket only")
	assert.Empty(t, page(1015, 10), "past the last")
	assert.Len(t, page(0, 1000), 1000)
}

// A worker whose lease ran out may still be writing an order when an
// operator drops its dead letter: its row and its unit in sold are
// written, not yet committed. The drop does not take the order for one
// that never reached MySQL and put its unit back on sale: it waits for the
// worker's transaction, finds the order written, and the order keeps its
// unit, so no other shopper is sold it (to have their order refused by
// the stock guard later).
func TestADeadLettersDropWaitsForALateWorkersInsert(t *testing.T) {
	s := startSale(t, saleOpts{noWorkers: true, env: map[string]string{"SECKILL_ORDER_MAX_ATTEMPTS": "1"}})
	a := s.apps[0]
	ctx := t.Context()
	sku := s.seed(1, 1)
	r := s.buy(0, sku, "alice", 1)
	require.Equal(t, http.StatusAccepted, r.Status, r.Raw)
	oid := r.Str("order_id")
	q := a.Stock.Queue(stock.PartOf(sku, oid))
	claimed, err := q.Claim(ctx, 10, 300*time.Millisecond)
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	tasks, err := stock.DecodeOrders(claimed[0].Payload)
	require.NoError(t, err)
	require.Len(t, tasks, 1)
	row := order.FromTask(tasks[0], 15*time.Minute, time.Now().UTC())
	// The worker's insert (order.Store.Insert), stalled before its commit.
	tx := a.DB.Begin()
	require.NoError(t, tx.Error)
	require.NoError(t, tx.Create(&row).Error)
	require.NoError(t, tx.Exec("UPDATE skus SET sold = sold + 1 WHERE id = ? AND sold + 1 <= stock_total", sku).Error)

	time.Sleep(400 * time.Millisecond) // past the worker's lease
	_, dead, err := q.Recover(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, dead)
	deleted := make(chan testutil.Reply, 1)
	go func() {
		deleted <- s.do(0, "DELETE", fmt.Sprintf("/admin/skus/%d/dead/%s", sku, claimed[0].ID), "", nil)
	}()
	var d testutil.Reply
	select {
	case d = <-deleted:
		assert.Fail(t, "the drop did not wait for the worker's transaction", "%d %s", d.Status, d.Raw)
		require.NoError(t, tx.Commit().Error)
	case <-time.After(500 * time.Millisecond): // the drop waits on the order's row
		require.NoError(t, tx.Commit().Error) // the late worker commits
		d = <-deleted
	}
	require.Equal(t, http.StatusOK, d.Status, d.Raw)

	assert.Equal(t, "pending_payment", s.do(0, "GET", "/api/v1/orders/"+oid, "alice", nil).Str("status"),
		"alice's order is in MySQL and stays hers")
	b := s.buy(0, sku, "bob", 1)
	assert.Equal(t, "sold_out", b.Str("error"), "alice holds the only unit: %s", b.Raw)
	rep := s.audit(sku)
	assert.True(t, rep.Consistent, "%+v", rep)
	assert.Equal(t, int64(0), *rep.RedisLeft)
	assert.Equal(t, int64(1), rep.Sold)
	assert.Zero(t, rep.Failed)
}

// A dropped order is recorded in MySQL as failed before its units go back
// on sale: its shopper sees it failed, and a worker whose lease ran out
// that writes it late finds it written and counts nothing (the task is
// done, not dead-lettered again).
func TestADroppedOrderIsRecordedAsFailed(t *testing.T) {
	rcv := startReceiver(t)
	s := startSale(t, saleOpts{noWorkers: true, env: map[string]string{
		"SECKILL_ORDER_MAX_ATTEMPTS":    "1",
		"SECKILL_EVENTS_WEBHOOK_URL":    rcv.srv.URL,
		"SECKILL_EVENTS_WEBHOOK_SECRET": eventSecret,
		"SECKILL_EVENTS_BACKOFF_MIN":    "50ms",
	}})
	a := s.apps[0]
	ctx := t.Context()
	sku := s.seed(1, 1)
	task, oid := deadLetter(t, s, sku, "alice")
	q := a.Stock.Queue(stock.PartOf(sku, oid))
	in, err := q.Inspect(ctx, task)
	require.NoError(t, err)

	r := s.do(0, "DELETE", fmt.Sprintf("/admin/skus/%d/dead/%s", sku, task), "", nil)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	got := s.do(0, "GET", "/api/v1/orders/"+oid, "alice", nil)
	require.Equal(t, http.StatusOK, got.Status, got.Raw)
	assert.Equal(t, "failed", got.Str("status"))
	rep := s.audit(sku)
	assert.True(t, rep.Consistent, "%+v", rep)
	assert.Equal(t, int64(1), *rep.RedisLeft, "alice's unit is back on sale")
	assert.Equal(t, int64(1), rep.Failed)
	assert.Zero(t, rep.Sold)

	// The late worker's delivery of the same task.
	_, err = q.Enqueue(ctx, queue.Task{ID: task, Type: in.Type, Payload: in.Payload, MaxAttempts: 1})
	require.NoError(t, err)
	s.workers = true
	s.start()
	require.Eventually(t, func() bool {
		st, err := q.Stats(ctx)
		return err == nil && st.Due+st.InFlight == 0
	}, 30*time.Second, 20*time.Millisecond)
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	assert.Zero(t, st.Dead, "the late write is done, not dead-lettered")
	assert.Equal(t, "failed", s.do(0, "GET", "/api/v1/orders/"+oid, "alice", nil).Str("status"))
	rep = s.audit(sku)
	assert.True(t, rep.Consistent, "%+v", rep)
	assert.Zero(t, rep.Sold, "the late write counted nothing")
	assert.Equal(t, int64(1), rep.Orders)
	assert.Equal(t, int64(1), *rep.RedisLeft)
	rcv.wait(map[string][]string{oid: {outbox.OrderFailed}})
	events, err := outbox.Audit(ctx, a.DB, time.Now(), time.Hour)
	require.NoError(t, err)
	assert.True(t, events.OK(), "the failed order has its event: %+v", events)

	// The unit is sold once more, to whoever buys it next.
	b := s.buy(0, sku, "bob", 1)
	require.Equal(t, http.StatusAccepted, b.Status, b.Raw)
	s.waitStatus("bob", b.Str("order_id"), "pending_payment")
	assert.Equal(t, "sold_out", s.buy(0, sku, "carol", 1).Str("error"))
}
