package stock

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A SKU whose limit counts cancelled orders keeps the units of a shopper's
// closed order in their count: the units are on sale again, for others.
// A void order (an operator dropped its dead letter) was never the
// shopper's and gives the count back; so does a closed order of a SKU whose
// limit counts only what a shopper holds.
func TestTheLimitCountsClosedOrdersWhenTheSKUSaysSo(t *testing.T) {
	for _, tc := range []struct {
		keep     bool
		why      ReturnReason
		buyAgain bool
	}{
		{keep: true, why: ReturnClosed, buyAgain: false},
		{keep: true, why: ReturnVoid, buyAgain: true},
		{keep: false, why: ReturnClosed, buyAgain: true},
	} {
		t.Run(fmt.Sprintf("keep=%v/%s", tc.keep, tc.why), func(t *testing.T) {
			const sku = 11
			ctx, store := testStore(t, StoreOptions{}, map[uint64]Config{sku: {Total: 2, Limit: 1, LimitCountsCancelled: tc.keep, Expires: time.Now().Add(time.Hour)}})
			b := &buyer{ctx: ctx, t: t, store: store, now: time.Now}
			first := b.buy(sku, "ann", "")
			require.NoError(t, first.Err)
			returned, err := store.Return(ctx, Part{SKU: sku}, first.OrderID, "ann", 1, tc.why)
			require.NoError(t, err)
			require.True(t, returned)
			again := b.buy(sku, "ann", "")
			if tc.buyAgain {
				assert.NoError(t, again.Err)
			} else {
				assert.ErrorIs(t, again.Err, ErrLimitExceeded)
				assert.NoError(t, b.buy(sku, "bo", "").Err, "the unit is on sale again for others")
			}
			st, _, err := store.State(ctx, Part{SKU: sku})
			require.NoError(t, err)
			assert.Equal(t, int64(1), st.Left, "of 2, one was returned and one bought again")
		})
	}
}
