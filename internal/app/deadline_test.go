package app

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/order"
	"github.com/seckill/seckill/internal/stock"
)

// A drain worker wrote a batch's orders in two chunks and died between the
// second chunk's commit and its payment deadline: the first chunk's deadline
// is queued, the last order's is not. The redelivered batch is written in
// one chunk, whose orders (all due in one second) group into one deadline
// unlike the first chunk's; it must be a task of its own, not taken for the
// one already queued, or the last order is never expired and holds its unit
// for good.
func TestARegroupedRedeliveryStillSchedulesEveryDeadline(t *testing.T) {
	s := startSale(t, saleOpts{noWorkers: true, env: map[string]string{"SECKILL_ORDER_PAYMENT_TIMEOUT": "2s"}})
	a := s.apps[0]
	ctx := t.Context()
	sku := s.seed(10, 1)
	b, orders := batchOf(sku, "ann", "ben", "cat") // created in the same millisecond
	now := time.Now().UTC()
	rows := make([]order.Order, len(orders))
	for i, tk := range orders {
		rows[i] = order.FromTask(tk, 2*time.Second, now)
	}
	q := a.Stock.Queue(stock.PartOf(sku, rows[0].OrderID))

	// The first delivery (drain.persist in two chunks): the first chunk
	// whole, the second dies between its commit and its deadline.
	_, _, err := a.Orders.Insert(ctx, rows[:2], now)
	require.NoError(t, err)
	_, err = q.EnqueueBatch(ctx, order.Deadlines(rows[:2]))
	require.NoError(t, err)
	_, _, err = a.Orders.Insert(ctx, rows[2:], now)
	require.NoError(t, err)

	// The batch was never acked: a drain worker takes it again.
	s.enqueueBatch(sku, b, orders, 0)
	s.workers = true
	s.start()
	for _, o := range rows {
		s.waitStatus(o.User, o.OrderID, "expired")
	}
}
