package stock

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// buyer buys one unit at a time, each as a new order "<sku>-<n>" created
// at now(); n counts the buys so far.
type buyer struct {
	ctx   context.Context
	t     *testing.T
	store *Store
	now   func() time.Time
	n     int
}

// buy buys one unit of sku for user with request id rid ("" for none) and
// returns the answer; an error from Redis fails the test.
func (b *buyer) buy(sku uint64, user, rid string) Result {
	b.t.Helper()
	b.n++
	_, res, err := b.store.Buy(b.ctx, sku, []Request{{User: user, Qty: 1, RequestID: rid, OrderID: fmt.Sprintf("%d-%d", sku, b.n), Created: b.now()}}, Guard{})
	require.NoError(b.t, err)
	return res[0]
}
