package stock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTheBuyScriptKeepsTheSalesEnd: Redis refuses buys at or past the end it
// holds, whatever the caller's cached window says; a sale ended early
// (EndedEarly) refuses a batch timed before the end too; a replay of an
// accepted request id is still answered.
func TestTheBuyScriptKeepsTheSalesEnd(t *testing.T) {
	now := time.Now()
	clock := func() time.Time { return now }
	const sku = 31
	cfg := Config{Total: 10, Limit: 5, Expires: now.Add(time.Hour), Ends: now.Add(time.Minute)}
	ctx, store := testStore(t, StoreOptions{Now: clock}, map[uint64]Config{sku: cfg})
	b := &buyer{ctx: ctx, t: t, store: store, now: clock}
	buy := func(user, rid string) Result { t.Helper(); return b.buy(sku, user, rid) }
	first := buy("alice", "r-1")
	require.NoError(t, first.Err)

	now = now.Add(time.Minute) // at the end
	assert.ErrorIs(t, buy("bob", "").Err, ErrSaleEnded)
	now = now.Add(-time.Minute)

	cfg.Ends = EndedEarly
	_, err := store.Configure(ctx, sku, cfg, false)
	require.NoError(t, err)
	assert.ErrorIs(t, buy("bob", "").Err, ErrSaleEnded, "a batch timed before the early end is refused too")
	replay := buy("alice", "r-1")
	require.NoError(t, replay.Err, "a replay is answered after the end")
	assert.Equal(t, first.OrderID, replay.OrderID)
	st, ok, err := store.State(ctx, Part{SKU: sku})
	require.NoError(t, err)
	require.True(t, ok)
	assert.EqualValues(t, 9, st.Left, "nothing taken after the end")

	// A stock written before the end was kept (Ends zero) has no end in Redis.
	_, err = store.Configure(ctx, sku+1, Config{Total: 1, Limit: 1, Expires: now.Add(time.Hour)}, true)
	require.NoError(t, err)
	_, res, err := store.Buy(ctx, Part{SKU: sku + 1}, []Request{{User: "carol", Qty: 1, Created: now}}, Guard{})
	require.NoError(t, err)
	assert.NoError(t, res[0].Err)
}
