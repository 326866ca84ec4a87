package app

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/outbox"
	"github.com/seckill/seckill/internal/testutil"
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

func startReceiver(t *testing.T) *receiver { return startReceiverOn(t, "") }

// startReceiverOn starts a receiver listening on addr (host:port; "" for
// any free port).
func startReceiverOn(t *testing.T, addr string) *receiver {
	v, err := webhook.NewVerifier([]string{eventSecret})
	require.NoError(t, err)
	r := &receiver{t: t, byOrder: map[string][]string{}, seen: map[string]int{}}
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
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
	if addr != "" {
		l, err := net.Listen("tcp", addr)
		require.NoError(t, err)
		_ = r.srv.Listener.Close()
		r.srv.Listener = l
	}
	r.srv.Start()
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
	require.Len(t, rep.Receivers, 1)
	assert.EqualValues(t, 7, rep.Receivers[0].Delivered+rep.Receivers[0].Pending)

	// A change made behind the store's back is found.
	require.NoError(t, s.apps[0].DB.Exec("UPDATE orders SET paid_at = ? WHERE order_id = ?", time.Now().UTC(), cancelled).Error)
	rep, err = outbox.Audit(t.Context(), s.apps[0].DB, time.Now(), time.Hour)
	require.NoError(t, err)
	require.Len(t, rep.Missing, 1, "%+v", rep)
	assert.Equal(t, outbox.Gap{Type: outbox.OrderPaid, Count: 1, Sample: []string{cancelled}}, rep.Missing[0])
}

// delivery is an item of GET /admin/events: one event's delivery to one
// receiver.
type delivery struct {
	EventID   string  `json:"event_id"`
	Type      string  `json:"type"`
	OrderID   string  `json:"order_id"`
	Receiver  string  `json:"receiver"`
	Status    string  `json:"status"`
	Attempts  int     `json:"attempts"`
	LastError *string `json:"last_error"`
}

// deliveries lists every delivery with status (to receiver, when not
// empty), page by page.
func (s *deployment) deliveries(status, receiver string) []delivery {
	s.t.Helper()
	var all []delivery
	path := "/admin/events?status=" + status + "&limit=500"
	if receiver != "" {
		path += "&receiver=" + url.QueryEscape(receiver)
	}
	for cursor := ""; ; {
		p := path
		if cursor != "" {
			p += "&cursor=" + cursor
		}
		r := s.do(0, "GET", p, "", nil)
		require.Equal(s.t, http.StatusOK, r.Status, r.Raw)
		var page struct {
			Items      []delivery `json:"items"`
			NextCursor string     `json:"next_cursor"`
		}
		require.NoError(s.t, json.Unmarshal([]byte(r.Raw), &page))
		all = append(all, page.Items...)
		if page.NextCursor == "" {
			return all
		}
		cursor = page.NextCursor
	}
}

// One receiver that refuses every connection (a closed port) among two
// holds back none of the other's events: through a sale with payments (one
// paid twice: a refund), cancels and expiries, the healthy receiver gets
// every event exactly once, each order's in order, while every event stays
// pending for the dead receiver alone. Once the dead one listens, it gets
// every event too, each order's in order.
func TestDeadReceiverHoldsBackOnlyItsOwnEvents(t *testing.T) {
	healthy := startReceiver(t)
	deadAddr := fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
	deadURL := "http://" + deadAddr + "/hooks"
	s := startPayments(t, saleOpts{env: map[string]string{
		"SECKILL_EVENTS_WEBHOOK_URL":    deadURL + "," + healthy.srv.URL,
		"SECKILL_EVENTS_WEBHOOK_SECRET": eventSecret,
		"SECKILL_EVENTS_BACKOFF_MIN":    "50ms",
		"SECKILL_EVENTS_BACKOFF_MAX":    "200ms",
		"SECKILL_ORDER_PAYMENT_TIMEOUT": "6s",
	}})
	sku := s.seed(20, 1)
	var ids []string
	for i := range 8 {
		id, _ := s.pendingOrder(sku, fmt.Sprintf("u%d", i))
		ids = append(ids, id)
	}
	want := map[string][]string{}
	pay := func(i int, n int) {
		for k := range n {
			r := s.notify(0, payment{webhookID: fmt.Sprintf("msg_%d_%d", i, k), paymentID: fmt.Sprintf("pay_%d_%d", i, k),
				orderID: ids[i], amount: 99900, currency: "EUR"})
			require.Equal(t, http.StatusOK, r.Status, r.Raw)
		}
	}
	pay(0, 1)
	pay(1, 2)
	want[ids[0]] = []string{outbox.OrderCreated, outbox.OrderPaid}
	want[ids[1]] = []string{outbox.OrderCreated, outbox.OrderPaid, outbox.PaymentRefundDue}
	for i := 2; i < 5; i++ {
		c := s.do(0, "POST", "/api/v1/orders/"+ids[i]+"/cancel", fmt.Sprintf("u%d", i), nil)
		require.Equal(t, http.StatusOK, c.Status, c.Raw)
		want[ids[i]] = []string{outbox.OrderCreated, outbox.OrderCancelled}
	}
	for i := 5; i < 8; i++ {
		s.waitStatus(fmt.Sprintf("u%d", i), ids[i], "expired")
		want[ids[i]] = []string{outbox.OrderCreated, outbox.OrderExpired}
	}
	changed := time.Now()
	healthy.wait(want)
	t.Logf("the healthy receiver had every event %v after the last change", time.Since(changed).Round(time.Millisecond))

	total := 0
	for _, types := range want {
		total += len(types)
	}
	healthy.mu.Lock()
	for id, n := range healthy.seen {
		assert.Equal(t, 1, n, "event %s reached the healthy receiver once", id)
	}
	assert.Len(t, healthy.seen, total)
	healthy.mu.Unlock()

	// Every event is pending for the dead receiver alone: the first of
	// each order tried and refused again and again, the later ones
	// waiting for it. The healthy receiver's are all delivered.
	healthyName, deadName := strings.TrimPrefix(healthy.srv.URL, "http://"), deadAddr+"/hooks"
	var pending []delivery
	testutil.Eventually(t, 30*time.Second, "every event pending for the dead receiver, each order's first retried", func() bool {
		pending = s.deliveries(outbox.StatusPending, "")
		if len(pending) != total {
			return false
		}
		for _, d := range pending {
			if d.Type == outbox.OrderCreated && d.Attempts < 2 {
				return false
			}
		}
		return true
	})
	for _, d := range pending {
		assert.Equal(t, deadName, d.Receiver, "%s pending for the dead receiver only", d.EventID)
		if d.Type != outbox.OrderCreated {
			assert.Zero(t, d.Attempts, "%s waits for its order's order.created", d.EventID)
			continue
		}
		if assert.NotNil(t, d.LastError) {
			assert.Contains(t, *d.LastError, "connection refused")
		}
	}
	assert.Empty(t, s.deliveries(outbox.StatusPending, healthyName))
	assert.Len(t, s.deliveries(outbox.StatusDelivered, healthyName), total)
	assert.Empty(t, s.deliveries(outbox.StatusDelivered, deadName))

	// The dead receiver comes up: it gets every event, each order's in
	// order, although each was refused before.
	revived := startReceiverOn(t, deadAddr)
	revived.wait(want)
	testutil.Eventually(t, 30*time.Second, "nothing pending", func() bool { return len(s.deliveries(outbox.StatusPending, "")) == 0 })
	assert.Len(t, s.deliveries(outbox.StatusDelivered, deadName), total)
	rep, err := outbox.Audit(t.Context(), s.apps[0].DB, time.Now(), time.Hour)
	require.NoError(t, err)
	assert.True(t, rep.OK(), "%+v", rep)
}
