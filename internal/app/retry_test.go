package app

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/orderid"
)

// The request id a 503 of unknown outcome names for a buy sent without one
// is "srv-" and the order id the buy would have got. A retry with it
// returns that order once it exists, in Redis or in SQL, for its own
// shopper only; when the first attempt never ran it buys once, and the
// first attempt can no longer run.
func TestARetryByTheServersRequestIDSettlesTheFirstAttempt(t *testing.T) {
	t.Parallel()
	s := startSale(t, saleOpts{})
	sku := s.seed(10, 5)
	buy := func(user, rid string) (int, string) {
		t.Helper()
		r := s.do(0, "POST", "/api/v1/orders", user, map[string]any{"sku_id": sku, "qty": 1, "request_id": rid})
		return r.Status, r.Str("order_id")
	}

	// The first attempt made its order, and the order is in SQL by now.
	first := s.order(0, sku, "u1")
	s.waitStatus("u1", first, "pending_payment")
	st, id := buy("u1", "srv-"+first)
	assert.Equal(t, http.StatusAccepted, st)
	assert.Equal(t, first, id, "the order the first attempt made, from SQL")
	st, id = buy("u2", "srv-"+first)
	assert.Equal(t, http.StatusAccepted, st)
	assert.NotEqual(t, first, id, "another shopper's order is not theirs: a buy of their own")

	// The first attempt never ran: the retry buys, once.
	never := "srv-" + orderid.NewBatch(sku, 0, time.Now(), 1).Order(0)
	st, id = buy("u3", never)
	require.Equal(t, http.StatusAccepted, st)
	st, again := buy("u3", never)
	assert.Equal(t, http.StatusAccepted, st)
	assert.Equal(t, id, again, "the same request id, the same order")

	// An id from the future is not one the server made.
	future := "srv-" + orderid.NewBatch(sku, 0, time.Now().Add(time.Hour), 1).Order(0)
	r := s.do(0, "POST", "/api/v1/orders", "u4", map[string]any{"sku_id": sku, "qty": 1, "request_id": future})
	assert.Equal(t, http.StatusBadRequest, r.Status, r.Raw)
	assert.Contains(t, r.Str("detail"), "request_id", r.Raw)

	rep := s.drained(sku)
	assert.Equal(t, int64(7), *rep.RedisLeft, "u1, u2 and u3 bought one unit each")
}
