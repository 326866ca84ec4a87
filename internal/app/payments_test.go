package app

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/order"
	"github.com/seckill/seckill/internal/testutil"
	"github.com/seckill/seckill/internal/webhook"
)

// paySecret and oldPaySecret are the payment side's keys: the current one
// and one being rotated out, both accepted.
var (
	paySecret    = "whsec_" + base64.StdEncoding.EncodeToString([]byte("payment-side-key-0123456789abcdef"))
	oldPaySecret = "whsec_" + base64.StdEncoding.EncodeToString([]byte("payment-side-key-rotated-out-0001"))
)

// startPayments starts a deployment whose orders are paid only by signed
// notifications (payment.mode webhook).
func startPayments(t *testing.T, o saleOpts) *deployment {
	t.Helper()
	if o.env == nil {
		o.env = map[string]string{}
	}
	o.env["SECKILL_PAYMENT_MODE"] = "webhook"
	o.env["SECKILL_PAYMENT_WEBHOOK_SECRET"] = oldPaySecret + ", " + paySecret
	o.env["SECKILL_PAYMENT_CURRENCY"] = "EUR"
	return startSale(t, o)
}

// payment is a payment.succeeded notification as a payment side sends it.
type payment struct {
	webhookID, paymentID, orderID string
	reference                     string // data.payment_reference, when set (order_id then only if set too)
	amount                        int64
	currency                      string
	at                            time.Time // the signature's timestamp; zero: now
	secret                        string    // zero: paySecret
}

func (p payment) body() []byte {
	data := map[string]any{"amount_cents": p.amount, "currency": p.currency, "payment_id": p.paymentID}
	if p.reference != "" {
		data["payment_reference"] = p.reference
	}
	if p.orderID != "" || p.reference == "" {
		data["order_id"] = p.orderID
	}
	b, _ := json.Marshal(map[string]any{"type": "payment.succeeded", "data": data})
	return b
}

// notify signs p as the payment side does and posts it to instance i.
func (s *deployment) notify(i int, p payment) testutil.Reply {
	s.t.Helper()
	r, err := s.send(i, p)
	require.NoError(s.t, err)
	return r
}

func (s *deployment) send(i int, p payment) (testutil.Reply, error) {
	body := p.body()
	if p.at.IsZero() {
		p.at = time.Now()
	}
	if p.secret == "" {
		p.secret = paySecret
	}
	signer, err := webhook.NewSigner(p.secret)
	if err != nil {
		return testutil.Reply{}, err
	}
	h, err := signer.Headers(p.webhookID, p.at, body)
	if err != nil {
		return testutil.Reply{}, err
	}
	req, err := http.NewRequest(http.MethodPost, s.urls[i%len(s.urls)]+"/webhooks/payments", bytes.NewReader(body))
	if err != nil {
		return testutil.Reply{}, err
	}
	req.Header = h
	req.Header.Set("Content-Type", "application/json")
	return s.caller().Send(req)
}

// payments reads the payments table's rows of orderID.
func (s *deployment) payments(orderID string) []order.Payment {
	s.t.Helper()
	var ps []order.Payment
	require.NoError(s.t, s.apps[0].DB.Where("order_id = ?", orderID).Order("id").Find(&ps).Error)
	return ps
}

// pendingOrder buys one unit of sku as user and waits until it is in SQL.
func (s *deployment) pendingOrder(sku uint64, user string) (string, testutil.Reply) {
	s.t.Helper()
	id := s.order(0, sku, user)
	return id, s.waitStatus(user, id, order.StatusPendingPayment)
}

// The flow end to end: the shopper's pay tells the checkout what to charge
// and changes nothing; the payment side's signed notification pays the
// order, once, however often it is sent.
func TestAPaymentNotificationPaysTheOrder(t *testing.T) {
	s := startPayments(t, saleOpts{})
	sku := s.seed(10, 2)
	id, o := s.pendingOrder(sku, "alice")

	co := s.do(0, "POST", "/api/v1/orders/"+id+"/pay", "alice", nil)
	require.Equal(t, http.StatusOK, co.Status, co.Raw)
	assert.Equal(t, id, co.Str("order_id"))
	assert.Equal(t, int64(99900), co.Num("amount_cents"))
	assert.Equal(t, "EUR", co.Str("currency"))
	assert.Equal(t, o.Str("expires_at"), co.Str("expires_at"))
	assert.Equal(t, order.StatusPendingPayment, co.Str("status"))
	ref := co.Str("payment_reference")
	assert.NotEmpty(t, ref)
	again := s.do(0, "POST", "/api/v1/orders/"+id+"/pay", "alice", nil)
	assert.Equal(t, ref, again.Str("payment_reference"), "the same reference every time")
	assert.Equal(t, order.StatusPendingPayment, s.do(0, "GET", "/api/v1/orders/"+id, "alice", nil).Str("status"),
		"a shopper's pay changes nothing in webhook mode")

	p := payment{webhookID: "msg_1", paymentID: "pi_1", orderID: id, amount: 99900, currency: "EUR"}
	r := s.notify(0, p)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	assert.Equal(t, order.PaymentApplied, r.Str("status"))
	assert.Equal(t, order.StatusPaid, r.Str("order_status"))
	assert.Equal(t, false, r.Body["replay"])
	assert.Equal(t, order.StatusPaid, s.do(0, "GET", "/api/v1/orders/"+id, "alice", nil).Str("status"))

	// The provider retries (same webhook-id), and sends the same payment
	// as a new message: nothing more happens.
	for _, replay := range []payment{p, {webhookID: "msg_1b", paymentID: "pi_1", orderID: id, amount: 99900, currency: "EUR"}} {
		r = s.notify(0, replay)
		require.Equal(t, http.StatusOK, r.Status, r.Raw)
		assert.Equal(t, true, r.Body["replay"])
		assert.Equal(t, order.PaymentApplied, r.Str("status"))
	}
	// Signed with the key being rotated out: accepted too. A second,
	// different payment of a paid order is owed back.
	r = s.notify(0, payment{webhookID: "msg_2", paymentID: "pi_2", orderID: id, amount: 99900, currency: "EUR", secret: oldPaySecret})
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	assert.Equal(t, order.PaymentRefundDue, r.Str("status"))
	assert.Equal(t, order.ReasonPaid, r.Str("reason"))

	// An order of two units costs its price_cents, the total.
	pair := s.buy(0, sku, "bea", 2)
	require.Equal(t, http.StatusAccepted, pair.Status, pair.Raw)
	two := s.waitStatus("bea", pair.Str("order_id"), order.StatusPendingPayment)
	require.Equal(t, int64(2*99900), two.Num("price_cents"))
	co = s.do(0, "POST", "/api/v1/orders/"+two.Str("order_id")+"/pay", "bea", nil)
	assert.Equal(t, int64(2*99900), co.Num("amount_cents"))
	r = s.notify(0, payment{webhookID: "msg_3", paymentID: "pi_3", orderID: two.Str("order_id"), amount: 2 * 99900, currency: "EUR"})
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	assert.Equal(t, order.PaymentApplied, r.Str("status"))

	ps := s.payments(id)
	require.Len(t, ps, 2)
	assert.Equal(t, []string{order.PaymentApplied, order.PaymentRefundDue}, []string{ps[0].Status, ps[1].Status})
	list := s.do(0, "GET", "/admin/payments?status=refund_due&order_id="+id, "", nil)
	require.Equal(t, http.StatusOK, list.Status, list.Raw)
	items, _ := list.Body["items"].([]any)
	require.Len(t, items, 1)
	assert.Equal(t, "pi_2", items[0].(map[string]any)["payment_id"])
	assert.Equal(t, order.StatusPaid, s.do(0, "POST", "/api/v1/orders/"+id+"/pay", "alice", nil).Str("status"))
}

// What the payment side gets for a notification that is forged, stale,
// unsigned, malformed, for the wrong amount or currency, for an unknown
// order, or for one not yet in SQL — and that nothing else is written.
func TestPaymentNotificationsThatMustNotPay(t *testing.T) {
	s := startPayments(t, saleOpts{})
	sku := s.seed(10, 2)
	id, _ := s.pendingOrder(sku, "bob")
	ok := payment{webhookID: "m", paymentID: "p", orderID: id, amount: 99900, currency: "EUR"}

	for name, p := range map[string]payment{
		"forged":              {webhookID: "m1", paymentID: "p1", orderID: id, amount: 99900, currency: "EUR", secret: "whsec_" + base64.StdEncoding.EncodeToString([]byte("not-the-payment-sides-key-000000"))},
		"stale":               {webhookID: "m2", paymentID: "p2", orderID: id, amount: 99900, currency: "EUR", at: time.Now().Add(-6 * time.Minute)},
		"from the future":     {webhookID: "m3", paymentID: "p3", orderID: id, amount: 99900, currency: "EUR", at: time.Now().Add(6 * time.Minute)},
		"an empty webhook-id": {webhookID: "", paymentID: "p4", orderID: id, amount: 99900, currency: "EUR"},
	} {
		r := s.notify(0, p)
		assert.Equal(t, http.StatusUnauthorized, r.Status, "%s: %s", name, r.Raw)
		assert.Equal(t, "invalid_signature", r.Str("error"), name)
	}
	// A body changed after signing.
	body := ok.body()
	signer, err := webhook.NewSigner(paySecret)
	require.NoError(t, err)
	h, err := signer.Headers("m5", time.Now(), body)
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, s.urls[0]+"/webhooks/payments", bytes.NewReader(bytes.Replace(body, []byte("99900"), []byte("1"), 1)))
	require.NoError(t, err)
	req.Header = h
	r, err := s.caller().Send(req)
	require.NoError(t, err)
	assert.Equal(t, http.StatusUnauthorized, r.Status, r.Raw)
	assert.Empty(t, s.payments(id), "nothing is written for a notification not signed by the payment side")

	// Signed, but not what the order costs: recorded, the order unchanged.
	for i, p := range []payment{
		{webhookID: "m6", paymentID: "p6", orderID: id, amount: 100, currency: "EUR"},
		{webhookID: "m7", paymentID: "p7", orderID: id, amount: 99900, currency: "USD"},
	} {
		for range 2 {
			r := s.notify(0, p)
			assert.Equal(t, http.StatusUnprocessableEntity, r.Status, r.Raw)
			assert.Equal(t, "payment_mismatch", r.Str("error"))
		}
		ps := s.payments(id)
		require.Len(t, ps, i+1, "recorded once")
		assert.Equal(t, order.PaymentMismatch, ps[i].Status)
		assert.Equal(t, []string{order.ReasonAmount, order.ReasonCurrency}[i], ps[i].Reason)
	}
	assert.Equal(t, order.StatusPendingPayment, s.do(0, "GET", "/api/v1/orders/"+id, "bob", nil).Str("status"))
	// The payment id of the mismatch again, now for the right amount: it
	// names a payment already recorded otherwise.
	r = s.notify(0, payment{webhookID: "m8", paymentID: "p6", orderID: id, amount: 99900, currency: "EUR"})
	assert.Equal(t, http.StatusUnprocessableEntity, r.Status, r.Raw)

	r = s.notify(0, payment{webhookID: "m9", paymentID: "p9", orderID: fmt.Sprintf("%d-06h102kcdfan8t3h000fsreq", sku), amount: 1, currency: "EUR"})
	assert.Equal(t, http.StatusNotFound, r.Status, r.Raw)
	// Not an order id, though MySQL's comparison, which ignores trailing
	// spaces, would find the order by it.
	r = s.notify(0, payment{webhookID: "m10", paymentID: "p10", orderID: id + "  ", amount: 99900, currency: "EUR"})
	assert.Equal(t, http.StatusNotFound, r.Status, r.Raw)
	for name, b := range map[string]string{
		"not JSON":         `{"type":`,
		"another type":     `{"type":"payment.failed","data":{"order_id":"x","amount_cents":1,"currency":"EUR","payment_id":"p"}}`,
		"no data":          `{"type":"payment.succeeded"}`,
		"no payment id":    `{"type":"payment.succeeded","data":{"order_id":"x","amount_cents":1,"currency":"EUR"}}`,
		"amount a string":  `{"type":"payment.succeeded","data":{"order_id":"x","amount_cents":"1","currency":"EUR","payment_id":"p"}}`,
		"a bad payment id": `{"type":"payment.succeeded","data":{"order_id":"x","amount_cents":1,"currency":"EUR","payment_id":"p q"}}`,
	} {
		h, err := signer.Headers("mb", time.Now(), []byte(b))
		require.NoError(t, err)
		req, err := http.NewRequest(http.MethodPost, s.urls[0]+"/webhooks/payments", bytes.NewReader([]byte(b)))
		require.NoError(t, err)
		req.Header = h
		r, err := s.caller().Send(req)
		require.NoError(t, err)
		assert.Equal(t, http.StatusBadRequest, r.Status, "%s: %s", name, r.Raw)
	}
	assert.Len(t, s.payments(id), 2)

	// An order accepted and still queued: the provider is told to retry,
	// and its retry pays the order once it is in SQL.
	q := startPayments(t, saleOpts{noWorkers: true})
	qsku := q.seed(5, 1)
	qid := q.order(0, qsku, "carol")
	p := payment{webhookID: "mq", paymentID: "pq", orderID: qid, amount: 99900, currency: "EUR"}
	r = q.notify(0, p)
	assert.Equal(t, http.StatusServiceUnavailable, r.Status, r.Raw)
	assert.Equal(t, "order_queued", r.Str("error"))
	assert.NotEmpty(t, r.Header.Get("Retry-After"))
	assert.Empty(t, q.payments(qid))
}

// A payment that arrives after the order expired and its unit was sold to
// someone else is owed back; the unit stays with its new buyer.
func TestALatePaymentAfterTheUnitWasSoldAgain(t *testing.T) {
	s := startPayments(t, saleOpts{env: map[string]string{"SECKILL_ORDER_PAYMENT_TIMEOUT": "1s", "SECKILL_WORKER_SWEEP_INTERVAL": "100ms"}})
	sku := s.seed(1, 1)
	first, _ := s.pendingOrder(sku, "dave")
	s.waitStatus("dave", first, order.StatusExpired)
	var second string
	require.Eventually(t, func() bool {
		r := s.buy(0, sku, "erin", 1)
		second = r.Str("order_id")
		return r.Status == http.StatusAccepted
	}, 10*time.Second, 50*time.Millisecond, "the returned unit is sold again")
	s.waitStatus("erin", second, order.StatusPendingPayment)

	r := s.notify(0, payment{webhookID: "late", paymentID: "pl", orderID: first, amount: 99900, currency: "EUR"})
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	assert.Equal(t, order.PaymentRefundDue, r.Str("status"))
	assert.Equal(t, order.StatusExpired, r.Str("reason"))
	assert.Equal(t, order.StatusExpired, r.Str("order_status"))
	assert.Equal(t, order.StatusExpired, s.do(0, "GET", "/api/v1/orders/"+first, "dave", nil).Str("status"))

	r = s.notify(0, payment{webhookID: "ok", paymentID: "pe", orderID: second, amount: 99900, currency: "EUR"})
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	assert.Equal(t, order.PaymentApplied, r.Str("status"))
	rep := s.drained(sku)
	assert.Equal(t, int64(1), rep.Sold, "one unit, sold once: to its new buyer")
	assert.Equal(t, int64(1), rep.Paid)
	assert.True(t, rep.Consistent, "%+v", rep)
}

// Payments racing their orders' deadlines, 300 of them, each sent twice at
// once (a provider's retry): every order ends paid or expired, never both
// nor neither; a paid order has exactly one applied payment, an expired
// one exactly one refund_due; every payment is recorded once; the units of
// the expired orders are back on sale.
func TestPaymentsRacingTheDeadline(t *testing.T) {
	const n = 300
	s := startPayments(t, saleOpts{env: map[string]string{
		"SECKILL_ORDER_PAYMENT_TIMEOUT": "4s", "SECKILL_WORKER_SWEEP_INTERVAL": "10ms"}})
	sku := s.seed(n, 1)
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			// A 503 busy (the lock's wait ran out on a loaded machine) is
			// retried, as a client does.
			r, _ := s.buyRetrying(i, sku, fmt.Sprintf("racer%d", i), 1)
			if assert.Equal(t, http.StatusAccepted, r.Status, r.Raw) {
				ids[i] = r.Str("order_id")
			}
		})
	}
	wg.Wait()
	s.drained(sku)
	expires := make([]time.Time, n)
	for i, id := range ids {
		var o order.Order
		require.NoError(t, s.apps[0].DB.Take(&o, "order_id = ?", id).Error)
		expires[i] = o.ExpiresAt
	}
	for i, id := range ids {
		wg.Go(func() {
			// From 1s before the deadline to 1s after it, spread out.
			time.Sleep(time.Until(expires[i].Add(time.Duration(i%51-25) * 40 * time.Millisecond)))
			p := payment{webhookID: "race-" + id, paymentID: "pr-" + id, orderID: id, amount: 99900, currency: "EUR"}
			var inner sync.WaitGroup
			for range 2 {
				inner.Go(func() {
					r, err := s.send(i, p)
					// A delivery that failed in transport (the server busy
					// past its write timeout on a loaded machine) is sent
					// again, as a provider does.
					for try := 0; err != nil && try < 3; try++ {
						time.Sleep(200 * time.Millisecond)
						r, err = s.send(i, p)
					}
					if assert.NoError(t, err) {
						assert.Equal(t, http.StatusOK, r.Status, r.Raw)
					}
				})
			}
			inner.Wait()
		})
	}
	wg.Wait()
	paid, reasons := 0, map[string]int{}
	for i, id := range ids {
		var o order.Order
		require.NoError(t, s.apps[0].DB.Take(&o, "order_id = ?", id).Error)
		if o.Status == order.StatusPendingPayment {
			s.waitStatus(fmt.Sprintf("racer%d", i), id, order.StatusExpired)
			o.Status = order.StatusExpired
		}
		ps := s.payments(id)
		require.Len(t, ps, 1, "order %s: one payment recorded", id)
		switch o.Status {
		case order.StatusPaid:
			paid++
			assert.Equal(t, order.PaymentApplied, ps[0].Status, id)
		case order.StatusExpired:
			assert.Equal(t, order.PaymentRefundDue, ps[0].Status, id)
			assert.Contains(t, []string{order.ReasonLate, order.StatusExpired}, ps[0].Reason, id)
			reasons[ps[0].Reason]++
		default:
			t.Errorf("order %s ended %s", id, o.Status)
		}
	}
	t.Logf("%d of %d orders paid, %d expired with their payment owed back (%d late while pending, %d after the expiry)",
		paid, n, n-paid, reasons[order.ReasonLate], reasons[order.StatusExpired])
	rep := s.drained(sku)
	assert.Equal(t, int64(paid), rep.Sold, "only the paid orders hold units")
	assert.Equal(t, int64(paid), rep.Paid)
	assert.True(t, rep.Consistent, "%+v", rep)
}
