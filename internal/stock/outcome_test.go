package stock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/orderid"
)

// A batch that ran is found queued by its orders' ids, for their own
// shoppers only; an id the batch did not accept is not found.
func TestOutcomeFindsAQueuedOrderForItsShopper(t *testing.T) {
	t.Parallel()
	const sku = 7101
	ctx, store := testStore(t, StoreOptions{}, map[uint64]Config{sku: {Total: 1, Limit: 1, Expires: time.Now().Add(time.Hour)}})
	now := time.Now()
	_, res, err := store.Buy(ctx, Part{SKU: sku}, []Request{{User: "a", Qty: 1, Created: now}, {User: "b", Qty: 1, Created: now}}, Guard{})
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
	require.ErrorIs(t, res[1].Err, ErrSoldOut)

	queued, err := store.Outcome(ctx, PartOf(sku, res[0].OrderID), res[0].OrderID, "a")
	require.NoError(t, err)
	assert.True(t, queued, "a's order is queued")
	queued, err = store.Outcome(ctx, PartOf(sku, res[0].OrderID), res[0].OrderID, "b")
	require.NoError(t, err)
	assert.False(t, queued, "not for another shopper")
	_, _, batch, _ := orderid.Parse(res[0].OrderID)
	refused := batch + res[0].OrderID[len(batch):len(batch)+2] + "zzzzzz" // same batch, another order
	queued, err = store.Outcome(ctx, PartOf(sku, refused), refused, "b")
	require.NoError(t, err)
	assert.False(t, queued, "b's request was refused in that batch")
}

// Once a retry asked for the outcome of a batch that never ran, that batch
// can no longer run: its script, arriving late, is refused, and a batch
// made before it (a slower clock) is made again after it.
func TestABatchSettledBeforeItRanNeverRuns(t *testing.T) {
	t.Parallel()
	const sku = 7102
	made := time.Now().Add(-time.Second).Truncate(time.Millisecond)
	ctx, store := testStore(t, StoreOptions{Now: func() time.Time { return made }}, map[uint64]Config{sku: {Total: 5, Limit: 5, Expires: time.Now().Add(time.Hour)}})
	stalled := orderid.NewBatch(sku, 0, made, 1).Order(0)

	queued, err := store.Outcome(ctx, PartOf(sku, stalled), stalled, "a")
	require.NoError(t, err)
	require.False(t, queued)

	reqs := []Request{{User: "a", Qty: 1, Created: made}}
	_, _, voidTo, err := store.buy(ctx, Part{SKU: sku}, reqs, Guard{}, made)
	require.ErrorIs(t, err, ErrBusy, "the late script writes nothing")
	assert.Equal(t, made.UnixMilli(), voidTo)
	st, _, err := store.State(ctx, Part{SKU: sku})
	require.NoError(t, err)
	assert.Equal(t, int64(5), st.Left)

	_, res, err := store.Buy(ctx, Part{SKU: sku}, reqs, Guard{})
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
	at, _ := orderid.Made(res[0].OrderID)
	assert.Equal(t, made.UnixMilli()+1, at.UnixMilli(), "made again after the settled batch")
}

// A script whose reply never came is an UncertainError naming each
// request's order id; nothing else is.
func TestAnUncertainBuyNamesEachRequestsOrder(t *testing.T) {
	t.Parallel()
	const sku = 7103
	ctx, store := testStore(t, StoreOptions{}, map[uint64]Config{sku: {Total: 5, Limit: 5, Expires: time.Now().Add(time.Hour)}})
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	reqs := []Request{{User: "a", Qty: 1, Created: time.Now()}, {User: "b", Qty: 1, Created: time.Now()}}
	_, _, err := store.Buy(cancelled, Part{SKU: sku}, reqs, Guard{})
	var ue *UncertainError
	require.ErrorAs(t, err, &ue)
	a, b := forRequest(err, 0), forRequest(err, 1)
	var oa, ob *OrderUncertainError
	require.ErrorAs(t, a, &oa)
	require.ErrorAs(t, b, &ob)
	assert.NotEqual(t, oa.OrderID, ob.OrderID)
	s1, _, batchA, ok := orderid.Parse(oa.OrderID)
	require.True(t, ok)
	_, _, batchB, _ := orderid.Parse(ob.OrderID)
	assert.Equal(t, uint64(sku), s1)
	assert.Equal(t, batchA, batchB, "one batch")
	assert.ErrorIs(t, a, context.Canceled)

	plain := errors.New("refused")
	assert.Same(t, plain, forRequest(plain, 0))
}
