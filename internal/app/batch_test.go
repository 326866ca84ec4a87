package app

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/orderid"
	"github.com/seckill/seckill/internal/queue"
	"github.com/seckill/seckill/internal/stock"
)

// Orders accepted together share one queue task, and each shopper still
// finds their own queued order by its id (and nobody else's).
func TestQueuedOrdersAreFoundInTheirBatch(t *testing.T) {
	onBackends(t, saleOpts{noWorkers: true}, func(t *testing.T, s *deployment) {
		const n = 40
		sku := s.seed(100, 1)
		ids := make([]string, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				r, _ := s.buyRetrying(i%len(s.urls), sku, fmt.Sprintf("u%d", i), 1)
				ids[i] = r.Str("order_id")
			})
		}
		wg.Wait()
		for i, id := range ids {
			r := s.do(0, "GET", "/api/v1/orders/"+id, fmt.Sprintf("u%d", i), nil)
			require.Equal(t, http.StatusOK, r.Status, r.Raw)
			assert.Equal(t, "queued", r.Str("status"))
			assert.Equal(t, fmt.Sprintf("u%d", i), r.Str("user_id"))
			assert.Equal(t, http.StatusNotFound, s.do(0, "GET", "/api/v1/orders/"+id, "someone-else", nil).Status)
		}
		st, err := s.apps[0].Stock.Queue(stock.Part{SKU: sku}).Stats(t.Context())
		require.NoError(t, err)
		assert.LessOrEqual(t, st.Due, int64(n), "at most one task per order")
		t.Logf("%d orders in %d tasks", n, st.Due)
		rep := s.audit(sku)
		assert.Equal(t, int64(n), rep.QueuedOrders)
		assert.True(t, rep.Consistent, "%+v", rep)
	})
}

// One order of a batch that cannot be written does not hold back its
// neighbours: they reach MySQL, and only the task, naming the bad order,
// is dead-lettered for an operator.
func TestABadOrderDoesNotHoldBackItsBatch(t *testing.T) {
	s := startSale(t, saleOpts{env: map[string]string{"SECKILL_ORDER_MAX_ATTEMPTS": "1"}})
	sku := s.seed(10, 1)
	b, orders := batchOf(sku, "alice", "bob", "carol")
	orders[1].Qty = 0 // incomplete
	good := []stock.OrderTask{orders[0], orders[2]}
	bad := orders[1]
	s.enqueueBatch(sku, b, orders, 1)

	for _, o := range good {
		s.waitStatus(o.User, o.OrderID, "pending_payment")
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		list := s.do(0, "GET", fmt.Sprintf("/admin/skus/%d/dead", sku), "", nil)
		require.Equal(t, http.StatusOK, list.Status, list.Raw)
		if dead, _ := list.Body["dead"].([]any); len(dead) == 1 {
			letter := dead[0].(map[string]any)
			assert.Equal(t, b.ID(), letter["id"])
			assert.Contains(t, letter["last_error"], bad.OrderID)
			break
		}
		require.True(t, time.Now().Before(deadline), "the task was not dead-lettered: %s", list.Raw)
		time.Sleep(50 * time.Millisecond)
	}
	assert.Equal(t, http.StatusNotFound, s.do(0, "GET", "/api/v1/orders/"+bad.OrderID, "bob", nil).Status)

	// Dropping the letter rebuilds the SKU's Redis state from MySQL, so a
	// unit the unreadable order held cannot stay taken.
	r := s.do(0, "DELETE", fmt.Sprintf("/admin/skus/%d/dead/%s", sku, b.ID()), "", nil)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	rep := s.audit(sku)
	assert.True(t, rep.Consistent, "%+v", rep)
	assert.Equal(t, int64(8), *rep.RedisLeft, "10 units, 2 in MySQL")
}

// A batch delivered again after some of its orders were written (a lost ack,
// a lease that ran out) writes the others and counts each unit once.
func TestARedeliveredBatchWritesEachOrderOnce(t *testing.T) {
	s := startSale(t, saleOpts{})
	sku := s.seed(10, 1)
	now := time.Now()
	b, orders := batchOf(sku, "alice", "bob")
	db := s.apps[0].DB
	require.NoError(t, db.Exec(
		`INSERT INTO orders (order_id, sku_id, user_id, qty, price_cents, status, fence, created_at, persisted_at, expires_at, updated_at)
		 VALUES (?, ?, 'alice', 1, 99900, 'pending_payment', 0, ?, ?, ?, ?)`,
		orders[0].OrderID, sku, now.UTC(), now.UTC(), now.Add(time.Hour).UTC(), now.UTC()).Error)
	require.NoError(t, db.Exec("UPDATE skus SET sold = sold + 1 WHERE id = ?", sku).Error)
	s.enqueueBatch(sku, b, orders, 0)

	s.waitStatus("bob", orders[1].OrderID, "pending_payment")
	var rows, sold int64
	require.NoError(t, db.Raw("SELECT COUNT(*) FROM orders WHERE sku_id = ?", sku).Scan(&rows).Error)
	require.NoError(t, db.Raw("SELECT sold FROM skus WHERE id = ?", sku).Scan(&sold).Error)
	assert.Equal(t, int64(2), rows, "each order once")
	assert.Equal(t, int64(2), sold, "each unit counted once")

	// Delivered once more with every order written: nothing changes.
	s.enqueueBatch(sku, b, orders, 0)
	q := s.apps[0].Stock.Queue(stock.Part{SKU: sku})
	require.Eventually(t, func() bool {
		st, err := q.Stats(t.Context())
		return err == nil && st.Due+st.InFlight == 0
	}, 30*time.Second, 20*time.Millisecond)
	st, err := q.Stats(t.Context())
	require.NoError(t, err)
	assert.Zero(t, st.Dead, "no dead letter")
	require.NoError(t, db.Raw("SELECT COUNT(*) FROM orders WHERE sku_id = ?", sku).Scan(&rows).Error)
	require.NoError(t, db.Raw("SELECT sold FROM skus WHERE id = ?", sku).Scan(&sold).Error)
	assert.Equal(t, int64(2), rows, "each order once")
	assert.Equal(t, int64(2), sold, "each unit counted once")
}

// batchOf makes the orders of one batch of sku, one unit for each user.
func batchOf(sku uint64, users ...string) (*orderid.Batch, []stock.OrderTask) {
	now := time.Now()
	b := orderid.NewBatch(sku, 0, now, len(users))
	orders := make([]stock.OrderTask, len(users))
	for i, u := range users {
		orders[i] = stock.OrderTask{OrderID: b.Order(i), SKU: sku, User: u, Qty: 1, PriceCents: 99900, CreatedMS: now.UnixMilli()}
	}
	return b, orders
}

// enqueueBatch puts orders in sku's queue as the task of batch b, as the buy
// script does (attempts 0: the queue's default).
func (s *deployment) enqueueBatch(sku uint64, b *orderid.Batch, orders []stock.OrderTask, attempts int) {
	s.t.Helper()
	payload, err := json.Marshal(orders)
	require.NoError(s.t, err)
	_, err = s.apps[0].Stock.Queue(stock.Part{SKU: sku}).Enqueue(context.Background(),
		queue.Task{ID: b.ID(), Type: stock.TaskCreate, Payload: payload, MaxAttempts: attempts})
	require.NoError(s.t, err)
}
