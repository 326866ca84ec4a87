package app

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/stock"
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
