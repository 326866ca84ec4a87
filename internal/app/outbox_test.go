package app

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/outbox"
	"github.com/seckill/seckill/internal/webhook"
)

var eventSecret = "whsec_" + base64.StdEncoding.EncodeToString([]byte("order-events-key-0123456789abcdef"))

// receiver is the shop's end of the order events: it checks every
// signature and keeps the events it acknowledged, in the order they came,
// per order.
type receiver struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	byOrder map[string][]string // order id → event types
	seen    map[string]int      // event id → deliveries
}

func startReceiver(t *testing.T) *receiver {
	v, err := webhook.NewVerifier([]string{eventSecret})
	require.NoError(t, err)
	r := &receiver{t: t, byOrder: map[string][]string{}, seen: map[string]int{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		if err := v.Verify(body, req.Header); err != nil {
			t.Errorf("event with a bad signature: %v", err)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var m struct {
			ID   string `json:"id"`
			Type string `json:"type"`
			Data struct {
				Order struct {
					OrderID string `json:"order_id"`
				} `json:"order"`
			} `json:"data"`
		}
		if err := json.Unmarshal(body, &m); err != nil || m.ID != req.Header.Get(webhook.HeaderID) {
			t.Errorf("event %s: body %s", req.Header.Get(webhook.HeaderID), body)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.seen[m.ID]++; r.seen[m.ID] == 1 {
			r.byOrder[m.Data.Order.OrderID] = append(r.byOrder[m.Data.Order.OrderID], m.Type)
		}
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// wait waits until the receiver has want for every order in it.
func (r *receiver) wait(want map[string][]string) {
	r.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r.mu.Lock()
		ok := true
		for id, types := range want {
			ok = ok && len(r.byOrder[id]) >= len(types)
		}
		got := map[string][]string{}
		for id := range want {
			got[id] = slices.Clone(r.byOrder[id])
		}
		r.mu.Unlock()
		if ok || time.Now().After(deadline) {
			assert.Equal(r.t, want, got, "each order's events, in order, once each")
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Every change of an order sends its event to the shop, in order per
// order: created, then paid, cancelled or expired; a payment for an order
// that cannot take it, payment.refund_due. The outbox audit finds every
// change with its event.
// The embedded mode (SQLite) runs the same.
func TestEveryOrderChangeSendsItsEvent(t *testing.T) {
	for _, embedded := range []bool{false, true} {
		t.Run(fmt.Sprintf("embedded=%v", embedded), func(t *testing.T) { everyOrderChangeSendsItsEvent(t, embedded) })
	}
}

func everyOrderChangeSendsItsEvent(t *testing.T, embedded bool) {
	rcv := startReceiver(t)
	s := startPayments(t, saleOpts{embedded: embedded, env: map[string]string{
		"SECKILL_EVENTS_WEBHOOK_URL":    rcv.srv.URL,
		"SECKILL_EVENTS_WEBHOOK_SECRET": eventSecret,
		"SECKILL_EVENTS_BACKOFF_MIN":    "50ms",
		"SECKILL_ORDER_PAYMENT_TIMEOUT": "6s",
	}})
	sku := s.seed(10, 2)
	paid, _ := s.pendingOrder(sku, "alice")
	cancelled, _ := s.pendingOrder(sku, "bob")
	expired, _ := s.pendingOrder(sku, "carol")

	r := s.notify(0, payment{webhookID: "msg_a1", paymentID: "pay_a1", orderID: paid, amount: 99900, currency: "EUR"})
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	r = s.notify(0, payment{webhookID: "msg_a2", paymentID: "pay_a2", orderID: paid, amount: 99900, currency: "EUR"})
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	require.Equal(t, "refund_due", r.Str("status"), r.Raw)
	c := s.do(0, "POST", "/api/v1/orders/"+cancelled+"/cancel", "bob", nil)
	require.Equal(t, http.StatusOK, c.Status, c.Raw)
	s.waitStatus("carol", expired, "expired")

	rcv.wait(map[string][]string{
		paid:      {outbox.OrderCreated, outbox.OrderPaid, outbox.PaymentRefundDue},
		cancelled: {outbox.OrderCreated, outbox.OrderCancelled},
		expired:   {outbox.OrderCreated, outbox.OrderExpired},
	})
	rep, err := outbox.Audit(t.Context(), s.apps[0].DB, time.Now(), time.Hour)
	require.NoError(t, err)
	assert.True(t, rep.OK(), "every change has its event and every event its change: %+v", rep)
	assert.EqualValues(t, 7, rep.Counts.Delivered+rep.Counts.Pending)

	// A change made behind the store's back is found.
	require.NoError(t, s.apps[0].DB.Exec("UPDATE orders SET paid_at = ? WHERE order_id = ?", time.Now().UTC(), cancelled).Error)
	rep, err = outbox.Audit(t.Context(), s.apps[0].DB, time.Now(), time.Hour)
	require.NoError(t, err)
	require.Len(t, rep.Missing, 1, "%+v", rep)
	assert.Equal(t, outbox.Gap{Type: outbox.OrderPaid, Count: 1, Sample: []string{cancelled}}, rep.Missing[0])
}
