package stock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/orderid"
)

// TestABatchIsOneTask: the orders one buy script accepts are one task of the
// SKU's queue, named by each order's id; the refused requests of the batch
// are not in it, and a batch that accepts nothing enqueues nothing.
func TestABatchIsOneTask(t *testing.T) {
	const sku = 41
	ctx, store := testStore(t, StoreOptions{}, map[uint64]Config{sku: {Total: 3, Limit: 1, Expires: time.Now().Add(time.Hour)}})

	now := time.Now()
	reqs := []Request{
		{User: "alice", Qty: 1, PriceCents: 100, Created: now},
		{User: "alice", Qty: 1, PriceCents: 100, Created: now}, // over her limit
		{User: "bob", Qty: 1, PriceCents: 100, Created: now, RequestID: "r-1"},
	}
	left, res, err := store.Buy(ctx, Part{SKU: sku}, reqs, Guard{})
	require.NoError(t, err)
	assert.Equal(t, int64(1), left)
	require.NoError(t, res[0].Err)
	assert.ErrorIs(t, res[1].Err, ErrLimitExceeded)
	require.NoError(t, res[2].Err)

	_, _, batch, ok := orderid.Parse(res[0].OrderID)
	require.True(t, ok, res[0].OrderID)
	_, _, batch2, _ := orderid.Parse(res[2].OrderID)
	assert.Equal(t, batch, batch2, "both orders name the batch")
	assert.NotEqual(t, res[0].OrderID, res[2].OrderID)

	st, err := store.Queue(Part{SKU: sku}).Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1), st.Due, "one task for the batch")
	info, err := store.Queue(Part{SKU: sku}).Inspect(ctx, batch)
	require.NoError(t, err)
	orders, err := DecodeOrders(info.Payload)
	require.NoError(t, err)
	require.Len(t, orders, 2)
	assert.Equal(t, OrderTask{OrderID: res[0].OrderID, SKU: sku, User: "alice", Qty: 1, PriceCents: 100, CreatedMS: now.UnixMilli()}, orders[0])
	assert.Equal(t, OrderTask{OrderID: res[2].OrderID, SKU: sku, User: "bob", Qty: 1, PriceCents: 100, CreatedMS: now.UnixMilli(), RequestID: "r-1"}, orders[1])

	queued, dead, err := store.QueuedOrders(ctx, Part{SKU: sku})
	require.NoError(t, err)
	assert.Equal(t, orders, queued)
	assert.Zero(t, dead)

	// Refused and replayed only: nothing is enqueued.
	_, res, err = store.Buy(ctx, Part{SKU: sku}, []Request{
		{User: "alice", Qty: 1, Created: now},
		{User: "bob", Qty: 1, Created: now, RequestID: "r-1"},
	}, Guard{})
	require.NoError(t, err)
	assert.ErrorIs(t, res[0].Err, ErrLimitExceeded)
	assert.True(t, res[1].Replayed)
	st, err = store.Queue(Part{SKU: sku}).Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1), st.Due)
}
