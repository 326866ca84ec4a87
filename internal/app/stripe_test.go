package app

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/seckill/seckill/internal/order"
	"github.com/seckill/seckill/internal/orderid"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testutil"
)

// The Stripe endpoint's signing secrets: the current one and one being
// rolled, both accepted.
const (
	stripeSecret    = "whsec_seckillTestSigningSecret0001"
	stripeOldSecret = "whsec_seckillTestSigningSecret0000"
)

// startStripe starts a deployment in payment.mode stripe against
// stripe-mock, behind a proxy that records what seckill sends it.
func startStripe(t *testing.T, o saleOpts) (*deployment, *testsvc.StripeAPI) {
	t.Helper()
	api := testsvc.Stripe(t)
	if o.env == nil {
		o.env = map[string]string{}
	}
	o.env["SECKILL_PAYMENT_MODE"] = "stripe"
	o.env["SECKILL_PAYMENT_CURRENCY"] = "EUR"
	o.env["SECKILL_PAYMENT_STRIPE_SECRET_KEY"] = "sk_test_seckillTestKey0123456789"
	o.env["SECKILL_PAYMENT_STRIPE_WEBHOOK_SECRET"] = stripeOldSecret + "," + stripeSecret
	o.env["SECKILL_PAYMENT_STRIPE_API_BASE"] = api.URL
	return startSale(t, o), api
}

// stripeEvent is an event as Stripe sends it, of type typ about
// PaymentIntent pi.
type stripeEvent struct {
	id, typ, pi string
	amount      int64
	currency    string
	metadata    map[string]string
	at          time.Time // the signature's time; zero: now
	secret      string    // zero: stripeSecret
}

func (e stripeEvent) body() []byte {
	b, _ := json.Marshal(map[string]any{"id": e.id, "object": "event", "type": e.typ, "api_version": "2025-07-30.basil",
		"livemode": false, "created": time.Now().Unix(),
		"data": map[string]any{"object": map[string]any{"id": e.pi, "object": "payment_intent", "amount": e.amount,
			"amount_received": e.amount, "currency": e.currency, "status": "succeeded", "metadata": e.metadata}}})
	return b
}

// stripePost posts body to /webhooks/stripe, signed with secret at at as
// Stripe signs (stripe-go's test helper) when signed, with no
// Stripe-Signature header otherwise.
func (s *deployment) stripePost(body []byte, secret string, at time.Time, signed bool) testutil.Reply {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.urls[0]+"/webhooks/stripe", bytes.NewReader(body))
	require.NoError(s.t, err)
	req.Header.Set("Content-Type", "application/json")
	if signed {
		sp := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: at})
		req.Header.Set("Stripe-Signature", sp.Header)
	}
	r, err := s.caller().Send(req)
	require.NoError(s.t, err)
	return r
}

// stripeNotify sends e as Stripe does.
func (s *deployment) stripeNotify(e stripeEvent) testutil.Reply {
	s.t.Helper()
	if e.secret == "" {
		e.secret = stripeSecret
	}
	if e.at.IsZero() {
		e.at = time.Now()
	}
	return s.stripePost(e.body(), e.secret, e.at, true)
}

// paymentIntent reads the PaymentIntent kept with an order.
func (s *deployment) paymentIntent(id string) string {
	s.t.Helper()
	var pi *string
	require.NoError(s.t, s.apps[0].DB.Raw("SELECT payment_intent FROM orders WHERE order_id = ?", id).Scan(&pi).Error)
	if pi == nil {
		return ""
	}
	return *pi
}

// A sale paid end to end through Stripe: the checkout opens one
// PaymentIntent per order, for exactly its amount and currency, keyed by the
// reference; Stripe's signed event pays the order, once; support's cancel of
// the paid order refunds it through the API.
func TestAStripeSaleEndToEnd(t *testing.T) {
	s, api := startStripe(t, saleOpts{})
	sku := s.seed(10, 2)
	pair := s.buy(0, sku, "alice", 2)
	require.Equal(t, http.StatusAccepted, pair.Status, pair.Raw)
	id := pair.Str("order_id")
	o := s.waitStatus("alice", id, order.StatusPendingPayment)
	ref := o.Str("payment_reference")
	require.Len(t, ref, orderid.ReferenceLen)

	co := s.do(0, "POST", "/api/v1/orders/"+id+"/pay", "alice", nil)
	require.Equal(t, http.StatusOK, co.Status, co.Raw)
	assert.Equal(t, int64(2*99900), co.Num("amount_cents"))
	assert.Equal(t, "EUR", co.Str("currency"))
	assert.Equal(t, ref, co.Str("payment_reference"))
	secret := co.Str("client_secret")
	assert.NotEmpty(t, secret, "the checkout gets what completes the payment")
	creates := api.Calls("POST", "/v1/payment_intents")
	require.Len(t, creates, 1, "one PaymentIntent")
	c := creates[0]
	assert.Equal(t, "/v1/payment_intents", c.Path)
	assert.Equal(t, ref, c.IdempotencyKey, "keyed by the reference")
	assert.Equal(t, "199800", c.Form.Get("amount"))
	assert.Equal(t, "eur", c.Form.Get("currency"))
	assert.Equal(t, id, c.Form.Get("metadata[order_id]"))
	assert.Equal(t, ref, c.Form.Get("metadata[payment_reference]"))
	pi := s.paymentIntent(id)
	require.NotEmpty(t, pi, "kept with the order")

	again := s.do(0, "POST", "/api/v1/orders/"+id+"/pay", "alice", nil)
	require.Equal(t, http.StatusOK, again.Status, again.Raw)
	assert.Len(t, api.Calls("POST", "/v1/payment_intents"), 1, "a second pay opens no other intent")
	got := api.Calls("GET", "/v1/payment_intents/"+pi)
	require.Len(t, got, 1, "it answers the same intent")
	assert.Equal(t, pi, s.paymentIntent(id))
	assert.Equal(t, order.StatusPendingPayment, s.do(0, "GET", "/api/v1/orders/"+id, "alice", nil).Str("status"),
		"a shopper's pay pays nothing in stripe mode")

	ev := stripeEvent{id: "evt_paid_1", typ: "payment_intent.succeeded", pi: pi, amount: 2 * 99900, currency: "eur",
		metadata: map[string]string{"order_id": id, "payment_reference": ref}}
	r := s.stripeNotify(ev)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	assert.Equal(t, order.PaymentApplied, r.Str("status"))
	assert.Equal(t, order.StatusPaid, r.Str("order_status"))
	assert.Equal(t, order.StatusPaid, s.do(0, "GET", "/api/v1/orders/"+id, "alice", nil).Str("status"))
	// Stripe delivers an event again: nothing more happens.
	r = s.stripeNotify(ev)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	assert.Equal(t, true, r.Body["replay"])
	ps := s.payments(id)
	require.Len(t, ps, 1)
	assert.Equal(t, pi, ps[0].PaymentID)
	assert.Equal(t, "evt_paid_1", ps[0].WebhookID)
	assert.Equal(t, order.StatusPaid, s.do(0, "POST", "/api/v1/orders/"+id+"/pay", "alice", nil).Str("status"))

	// Support cancels the paid order: Stripe refunds it, once.
	cr, v := s.supportCancel(0, id, "duplicate purchase")
	require.Equal(t, http.StatusOK, cr.Status, cr.Raw)
	require.NotNil(t, v)
	assert.Equal(t, order.RefundIssued, cr.Str("refund"))
	assert.NotEmpty(t, cr.Str("refund_id"))
	refunds := api.Calls("POST", "/v1/refunds")
	require.Len(t, refunds, 1)
	assert.Equal(t, pi, refunds[0].Form.Get("payment_intent"))
	assert.Equal(t, "refund_"+ref, refunds[0].IdempotencyKey)
	cr, _ = s.supportCancel(0, id, "sent again")
	assert.Equal(t, order.RefundIssued, cr.Str("refund"))
	assert.Len(t, api.Calls("POST", "/v1/refunds"), 1, "an issued refund is not asked again")
	rep := s.drained(sku)
	assert.True(t, rep.Consistent, "%+v", rep)
}

// stripeCheckout places an order for user, waits until it is pending and
// goes to pay it: the order and the PaymentIntent kept with it.
func (s *deployment) stripeCheckout(sku uint64, user string) (id, pi string) {
	s.t.Helper()
	id, _ = s.pendingOrder(sku, user)
	co := s.do(0, "POST", "/api/v1/orders/"+id+"/pay", user, nil)
	require.Equal(s.t, http.StatusOK, co.Status, co.Raw)
	pi = s.paymentIntent(id)
	require.NotEmpty(s.t, pi)
	return id, pi
}

// An order that closes unpaid has its PaymentIntent cancelled through the
// API: by the shopper and by support; a pay of a closed order opens
// nothing.
func TestStripeCancelsTheIntentOfAClosedOrder(t *testing.T) {
	s, api := startStripe(t, saleOpts{})
	sku := s.seed(10, 1)
	cancels := func(pi string) int { return len(api.Calls("POST", "/v1/payment_intents/"+pi+"/cancel")) }

	id, pi := s.stripeCheckout(sku, "carol")
	r := s.do(0, "POST", "/api/v1/orders/"+id+"/cancel", "carol", nil)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	assert.Equal(t, 1, cancels(pi), "the shopper's cancel cancels the intent")
	r = s.do(0, "POST", "/api/v1/orders/"+id+"/cancel", "carol", nil)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	assert.Equal(t, 1, cancels(pi), "once")

	// stripe-mock may answer every create with the same fixture id: the
	// count goes on from there.
	id2, pi2 := s.stripeCheckout(sku, "dan")
	before := cancels(pi2)
	cr, _ := s.supportCancel(0, id2, "shopper asked by phone")
	require.Equal(t, http.StatusOK, cr.Status, cr.Raw)
	assert.Equal(t, order.RefundNone, cr.Str("refund"))
	assert.Equal(t, before+1, cancels(pi2), "support's cancel of an unpaid order cancels the intent")
	assert.Empty(t, api.Calls("POST", "/v1/refunds"), "nothing to refund")

	creates := len(api.Calls("POST", "/v1/payment_intents"))
	r = s.do(0, "POST", "/api/v1/orders/"+id2+"/pay", "dan", nil)
	assert.Equal(t, http.StatusConflict, r.Status, r.Raw)
	assert.Equal(t, creates, len(api.Calls("POST", "/v1/payment_intents")), "a closed order opens nothing")
}

// An order whose deadline passes has its PaymentIntent cancelled by the
// expiry; a payment that arrives all the same is owed back.
func TestStripeExpiryCancelsTheIntent(t *testing.T) {
	s, api := startStripe(t, saleOpts{env: map[string]string{"SECKILL_ORDER_PAYMENT_TIMEOUT": "5s", "SECKILL_WORKER_SWEEP_INTERVAL": "100ms"}})
	sku := s.seed(10, 1)
	id, pi := s.stripeCheckout(sku, "erin")
	s.waitStatus("erin", id, order.StatusExpired)
	testutil.Eventually(t, 10*time.Second, "the expiry cancels the intent", func() bool {
		return len(api.Calls("POST", "/v1/payment_intents/"+pi+"/cancel")) == 1
	})

	// The shopper paid before Stripe heard of the cancel.
	ref, _ := orderid.Reference(id)
	r := s.stripeNotify(stripeEvent{id: "evt_late", typ: "payment_intent.succeeded", pi: pi, amount: 99900, currency: "eur",
		metadata: map[string]string{"order_id": id, "payment_reference": ref}})
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	assert.Equal(t, order.PaymentRefundDue, r.Str("status"))
	assert.Equal(t, order.StatusExpired, r.Str("reason"))
	assert.Equal(t, order.StatusExpired, s.do(0, "GET", "/api/v1/orders/"+id, "erin", nil).Str("status"))
}

// A refund Stripe refuses stays due, with Stripe's reason, and is asked
// again by the cancel sent again.
func TestARefusedStripeRefundStaysDue(t *testing.T) {
	s, api := startStripe(t, saleOpts{})
	sku := s.seed(10, 1)
	id, _ := s.pendingOrder(sku, "fay")
	co := s.do(0, "POST", "/api/v1/orders/"+id+"/pay", "fay", nil)
	require.Equal(t, http.StatusOK, co.Status, co.Raw)
	pi := s.paymentIntent(id)
	r := s.stripeNotify(stripeEvent{id: "evt_fay", typ: "payment_intent.succeeded", pi: pi, amount: 99900, currency: "eur",
		metadata: map[string]string{"payment_reference": co.Str("payment_reference")}})
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	require.Equal(t, order.PaymentApplied, r.Str("status"))

	api.Refuse("POST", "/v1/refunds", "charge_already_refunded", "Charge ch_1 has already been refunded.")
	cr, _ := s.supportCancel(0, id, "goods never shipped")
	require.Equal(t, http.StatusOK, cr.Status, cr.Raw)
	assert.Equal(t, order.RefundDue, cr.Str("refund"))
	assert.Contains(t, cr.Str("refund_error"), "Charge ch_1 has already been refunded.")
	assert.Empty(t, cr.Str("refund_id"))
	assert.Equal(t, order.StatusCancelled, cr.Str("status"))
	cr, _ = s.supportCancel(0, id, "again")
	assert.Equal(t, order.RefundDue, cr.Str("refund"))
	assert.Len(t, api.Calls("POST", "/v1/refunds"), 2, "the cancel sent again asks again")
	list := s.do(0, "GET", "/admin/orders?payment_reference="+co.Str("payment_reference"), "", nil)
	require.Equal(t, http.StatusOK, list.Status, list.Raw)
	assert.Contains(t, list.Raw, "already been refunded")
}

// What Stripe gets for an event that is forged, unsigned, stale, malformed,
// for another amount or currency, for an unknown order, or not one seckill
// acts on — and that nothing is written but what should be.
func TestStripeEventsThatMustNotPay(t *testing.T) {
	s, _ := startStripe(t, saleOpts{})
	sku := s.seed(10, 2)
	id, _ := s.pendingOrder(sku, "gus")
	ref, _ := orderid.Reference(id)
	md := map[string]string{"order_id": id, "payment_reference": ref}
	ok := stripeEvent{id: "evt_ok", typ: "payment_intent.succeeded", pi: "pi_gus", amount: 99900, currency: "eur", metadata: md}

	for name, e := range map[string]stripeEvent{
		"forged":          {id: "evt_f", typ: ok.typ, pi: "pi_f", amount: 99900, currency: "eur", metadata: md, secret: "whsec_notTheEndpointsSecret00000"},
		"stale":           {id: "evt_s", typ: ok.typ, pi: "pi_s", amount: 99900, currency: "eur", metadata: md, at: time.Now().Add(-6 * time.Minute)},
		"stale, ignored":  {id: "evt_s2", typ: "charge.succeeded", pi: "pi_s2", at: time.Now().Add(-6 * time.Minute)},
		"forged, ignored": {id: "evt_f2", typ: "customer.created", pi: "pi_f2", secret: "whsec_notTheEndpointsSecret00000"},
	} {
		r := s.stripeNotify(e)
		assert.Equal(t, http.StatusUnauthorized, r.Status, "%s: %s", name, r.Raw)
		assert.Equal(t, "invalid_signature", r.Str("error"), name)
	}
	r := s.stripePost(ok.body(), "", time.Time{}, false)
	assert.Equal(t, http.StatusUnauthorized, r.Status, "unsigned: %s", r.Raw)
	// Signed, then changed.
	sp := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: ok.body(), Secret: stripeSecret})
	req, err := http.NewRequest(http.MethodPost, s.urls[0]+"/webhooks/stripe", bytes.NewReader(bytes.Replace(ok.body(), []byte("99900"), []byte("1"), 1)))
	require.NoError(t, err)
	req.Header.Set("Stripe-Signature", sp.Header)
	r, err = s.caller().Send(req)
	require.NoError(t, err)
	assert.Equal(t, http.StatusUnauthorized, r.Status, r.Raw)
	assert.Empty(t, s.payments(id), "nothing is written for an event Stripe did not sign")

	// Events seckill does not act on: 200, so that Stripe stops sending.
	for name, e := range map[string]stripeEvent{
		"another type":      {id: "evt_t", typ: "charge.succeeded", pi: "pi_t", amount: 99900, currency: "eur", metadata: md},
		"a failed payment":  {id: "evt_pf", typ: "payment_intent.payment_failed", pi: "pi_pf", amount: 99900, currency: "eur", metadata: md},
		"not an order's":    {id: "evt_n", typ: ok.typ, pi: "pi_n", amount: 99900, currency: "eur"},
		"the rolled secret": {id: "evt_r", typ: "charge.refunded", pi: "pi_r", secret: stripeOldSecret},
	} {
		r := s.stripeNotify(e)
		require.Equal(t, http.StatusOK, r.Status, "%s: %s", name, r.Raw)
		assert.Equal(t, true, r.Body["ignored"], name)
	}
	assert.Empty(t, s.payments(id))

	for name, b := range map[string]string{
		"not JSON":              `{"id":`,
		"two objects":           `{"id":"evt_a","type":"charge.succeeded"} {}`,
		"no id":                 `{"type":"payment_intent.succeeded","data":{"object":{}}}`,
		"no object":             `{"id":"evt_b","type":"payment_intent.succeeded","data":{}}`,
		"not a payment intent":  `{"id":"evt_c","type":"payment_intent.succeeded","data":{"object":{"id":"ch_1","object":"charge","metadata":{"order_id":"x"}}}}`,
		"no amount received":    `{"id":"evt_d","type":"payment_intent.succeeded","data":{"object":{"id":"pi_1","object":"payment_intent","currency":"eur","metadata":{"order_id":"x"}}}}`,
		"amount a string":       `{"id":"evt_e","type":"payment_intent.succeeded","data":{"object":{"id":"pi_1","object":"payment_intent","amount_received":"1","currency":"eur","metadata":{"order_id":"x"}}}}`,
		"a bad event id":        `{"id":"evt e","type":"payment_intent.succeeded","data":{"object":{"id":"pi_1","object":"payment_intent","amount_received":1,"currency":"eur","metadata":{"order_id":"` + id + `"}}}}`,
		"a two-letter currency": `{"id":"evt_g","type":"payment_intent.succeeded","data":{"object":{"id":"pi_1","object":"payment_intent","amount_received":1,"currency":"eu","metadata":{"order_id":"` + id + `"}}}}`,
	} {
		r := s.stripePost([]byte(b), stripeSecret, time.Now(), true)
		assert.Equal(t, http.StatusBadRequest, r.Status, "%s: %s", name, r.Raw)
		assert.Equal(t, "invalid_request", r.Str("error"), name)
	}
	assert.Empty(t, s.payments(id))

	// An order that is no order, or none seckill has.
	other, _ := orderid.Reference(strings.Replace(id, "-", "-z", 1)[:len(id)])
	for name, m := range map[string]map[string]string{
		"an unknown reference":  {"payment_reference": other},
		"not a reference":       {"payment_reference": "pay_" + id},
		"an unknown order id":   {"order_id": strings.Replace(id, "-", "-z", 1)[:len(id)]},
		"ids that do not agree": {"order_id": id, "payment_reference": other},
	} {
		r := s.stripeNotify(stripeEvent{id: "evt_u" + strings.ReplaceAll(name, " ", "_"), typ: ok.typ, pi: "pi_u", amount: 99900, currency: "eur", metadata: m})
		assert.Contains(t, []int{http.StatusNotFound, http.StatusBadRequest}, r.Status, "%s: %s", name, r.Raw)
	}
	assert.Empty(t, s.payments(id))

	// Signed, but not what the order costs: 422, the order unchanged.
	for i, e := range []stripeEvent{
		{id: "evt_amount", typ: ok.typ, pi: "pi_amount", amount: 100, currency: "eur", metadata: md},
		{id: "evt_currency", typ: ok.typ, pi: "pi_currency", amount: 99900, currency: "usd", metadata: md},
	} {
		for range 2 {
			r := s.stripeNotify(e)
			assert.Equal(t, http.StatusUnprocessableEntity, r.Status, r.Raw)
			assert.Equal(t, "payment_mismatch", r.Str("error"))
		}
		ps := s.payments(id)
		require.Len(t, ps, i+1, "recorded once, as a mismatch")
		assert.Equal(t, order.PaymentMismatch, ps[i].Status)
	}
	assert.Equal(t, order.StatusPendingPayment, s.do(0, "GET", "/api/v1/orders/"+id, "gus", nil).Str("status"))

	// The right payment pays; the same payment in another event is a
	// replay; a second payment of the paid order is owed back.
	r = s.stripeNotify(ok)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	assert.Equal(t, order.PaymentApplied, r.Str("status"))
	r = s.stripeNotify(stripeEvent{id: "evt_ok_again", typ: ok.typ, pi: "pi_gus", amount: 99900, currency: "eur", metadata: md})
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	assert.Equal(t, true, r.Body["replay"])
	r = s.stripeNotify(stripeEvent{id: "evt_second", typ: ok.typ, pi: "pi_gus_2", amount: 99900, currency: "eur", metadata: md})
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	assert.Equal(t, order.PaymentRefundDue, r.Str("status"))
	assert.Equal(t, order.ReasonPaid, r.Str("reason"))
	assert.Len(t, s.payments(id), 4)
}
