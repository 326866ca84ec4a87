package app

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/order"
	"github.com/seckill/seckill/internal/orderid"
	"github.com/seckill/seckill/internal/payment/paytest"
	"github.com/seckill/seckill/internal/testutil"
)

// The shop's Alipay app and WeChat Pay merchant in these tests; the
// providers' keys are paytest.Keys: [0] the current one, [1] one being
// rotated out.
const (
	alipayApp   = "2021000123456789"
	wxMch       = "1230000109"
	wxAPIv3Key  = "0123456789abcdefABCDEF0123456789"
	wxSerial    = "5157F09EFDC096DE15EBE81A47057A7232F1B8E1"
	wxOldSerial = "3775B6A45ACD588826D15E583A95F5DD2C325A7B"
)

func publicPEM(t *testing.T, k *rsa.PrivateKey) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	require.NoError(t, err)
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

// startAlipay starts a deployment whose orders are paid by Alipay's
// notifications; its key as PEM, the one rotated out as the console's
// base64.
func startAlipay(t *testing.T, o saleOpts) *deployment {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(&paytest.Keys()[1].PublicKey)
	require.NoError(t, err)
	o.env = merged(o.env, map[string]string{"SECKILL_PAYMENT_MODE": "alipay", "SECKILL_PAYMENT_CURRENCY": "CNY",
		"SECKILL_PAYMENT_ALIPAY_APP_ID":     alipayApp,
		"SECKILL_PAYMENT_ALIPAY_PUBLIC_KEY": publicPEM(t, paytest.Keys()[0]) + "," + base64.StdEncoding.EncodeToString(der)})
	return startSale(t, o)
}

// startWeChatPay starts a deployment whose orders are paid by WeChat Pay's
// notifications, with two platform keys.
func startWeChatPay(t *testing.T, o saleOpts) *deployment {
	t.Helper()
	o.env = merged(o.env, map[string]string{"SECKILL_PAYMENT_MODE": "wechatpay", "SECKILL_PAYMENT_CURRENCY": "CNY",
		"SECKILL_PAYMENT_WECHATPAY_MCH_ID":     wxMch,
		"SECKILL_PAYMENT_WECHATPAY_API_V3_KEY": wxAPIv3Key,
		"SECKILL_PAYMENT_WECHATPAY_PLATFORM_PUBLIC_KEY": wxSerial + "=" + publicPEM(t, paytest.Keys()[0]) + "," +
			wxOldSerial + "=" + publicPEM(t, paytest.Keys()[1])})
	return startSale(t, o)
}

func merged(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// post sends body to path on instance 0 with headers h.
func (s *deployment) post(path string, body []byte, h http.Header) testutil.Reply {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.urls[0]+path, bytes.NewReader(body))
	require.NoError(s.t, err)
	for k, v := range h {
		req.Header[k] = v
	}
	r, err := s.caller().Send(req)
	require.NoError(s.t, err)
	return r
}

// alipay posts Alipay's notification of params, signed with key (nil: the
// current one).
func (s *deployment) alipay(params map[string]string, key *rsa.PrivateKey) testutil.Reply {
	s.t.Helper()
	if key == nil {
		key = paytest.Keys()[0]
	}
	return s.post("/webhooks/alipay", paytest.AlipayBody(s.t, params, key),
		http.Header{"Content-Type": {"application/x-www-form-urlencoded; charset=utf-8"}})
}

// reference is the payment reference the checkout gives for user's order.
func (s *deployment) reference(user, id string) string {
	s.t.Helper()
	co := s.do(0, "POST", "/api/v1/orders/"+id+"/pay", user, nil)
	require.Equal(s.t, http.StatusOK, co.Status, co.Raw)
	require.Equal(s.t, "CNY", co.Str("currency"))
	require.Equal(s.t, order.StatusPendingPayment, s.do(0, "GET", "/api/v1/orders/"+id, user, nil).Str("status"),
		"a shopper's pay changes nothing: the provider's notification pays")
	return co.Str("payment_reference")
}

// paymentsCounted is the series of the payments counter with these labels.
func paymentsCounted(outcome, reason string) string {
	return fmt.Sprintf(`seckill_payments_notifications_total{outcome=%q,reason=%q}`, outcome, reason)
}

// A sale paid end to end through Alipay: the checkout's reference is the
// trade's out_trade_no; Alipay's notification pays the order once, however
// often it comes and whatever follows (TRADE_FINISHED); and every bad
// input of the provider gets its answer and writes nothing it should not.
func TestASalePaidThroughAlipay(t *testing.T) {
	s := startAlipay(t, saleOpts{})
	sku := s.seed(10, 1)
	id, _ := s.pendingOrder(sku, "alice")
	ref := s.reference("alice", id)

	// The buyer opened the cashier: no payment yet.
	wait := paytest.AlipayParams(alipayApp, "n-wait", "2026112722001424331427014565", ref, "999.00")
	wait["trade_status"] = "WAIT_BUYER_PAY"
	r := s.alipay(wait, nil)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	assert.Equal(t, "success", r.Raw)
	assert.Empty(t, s.payments(id))

	paid := paytest.AlipayParams(alipayApp, "n-paid", "2026112722001424331427014565", ref, "999.00")
	for range 2 { // Alipay retries until it reads success
		r = s.alipay(paid, nil)
		require.Equal(t, http.StatusOK, r.Status, r.Raw)
		assert.Equal(t, "success", r.Raw)
	}
	finished := paytest.AlipayParams(alipayApp, "n-finished", "2026112722001424331427014565", ref, "999.00")
	finished["trade_status"] = "TRADE_FINISHED"
	r = s.alipay(finished, paytest.Keys()[1]) // signed with the key being rotated out
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	assert.Equal(t, "success", r.Raw)
	assert.Equal(t, order.StatusPaid, s.do(0, "GET", "/api/v1/orders/"+id, "alice", nil).Str("status"))
	ps := s.payments(id)
	require.Len(t, ps, 1, "one payment, recorded once")
	assert.Equal(t, order.PaymentApplied, ps[0].Status)
	assert.Equal(t, "2026112722001424331427014565", ps[0].PaymentID)
	assert.Equal(t, "n-paid", ps[0].WebhookID)
	assert.Equal(t, int64(99900), ps[0].AmountCents)
	assert.Equal(t, "CNY", ps[0].Currency)

	// Bad input, for bob's order.
	bid, _ := s.pendingOrder(sku, "bob")
	bref := s.reference("bob", bid)
	good := func(notifyID string) map[string]string {
		return paytest.AlipayParams(alipayApp, notifyID, "T-"+notifyID, bref, "999.00")
	}
	forged, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	changed := paytest.AlipayBody(t, good("b1"), paytest.Keys()[0])
	changed = bytes.Replace(changed, []byte("total_amount=999.00"), []byte("total_amount=0.01"), 1)
	for name, tc := range map[string]struct {
		body   []byte
		status int
	}{
		"forged":            {paytest.AlipayBody(t, good("b2"), forged), http.StatusUnauthorized},
		"changed":           {changed, http.StatusUnauthorized},
		"unsigned":          {[]byte("notify_id=b3&trade_no=T3&out_trade_no=" + bref + "&trade_status=TRADE_SUCCESS&total_amount=999.00&app_id=" + alipayApp), http.StatusUnauthorized},
		"another app":       {paytest.AlipayBody(t, with(good("b4"), "app_id", "2021000999999999"), paytest.Keys()[0]), http.StatusUnprocessableEntity},
		"3 decimals":        {paytest.AlipayBody(t, with(good("b5"), "total_amount", "999.001"), paytest.Keys()[0]), http.StatusBadRequest},
		"not a form":        {[]byte("%zz"), http.StatusBadRequest},
		"unknown reference": {paytest.AlipayBody(t, with(good("b6"), "out_trade_no", "A1b2C3d4E5f6G7h8"), paytest.Keys()[0]), http.StatusNotFound},
	} {
		r := s.post("/webhooks/alipay", tc.body, http.Header{"Content-Type": {"application/x-www-form-urlencoded"}})
		assert.Equal(t, tc.status, r.Status, "%s: %s", name, r.Raw)
		assert.Equal(t, "fail", r.Raw, name)
	}
	assert.Empty(t, s.payments(bid), "nothing written for a notification not verified or not the shop's")
	// The wrong amount: recorded as a mismatch, the order unchanged; Alipay
	// is told fail, and its retries get the same.
	for range 2 {
		r = s.alipay(with(good("b7"), "total_amount", "999"+".01"), nil)
		assert.Equal(t, http.StatusUnprocessableEntity, r.Status, r.Raw)
		assert.Equal(t, "fail", r.Raw)
	}
	ps = s.payments(bid)
	require.Len(t, ps, 1)
	assert.Equal(t, order.PaymentMismatch, ps[0].Status)
	assert.Equal(t, order.StatusPendingPayment, s.do(0, "GET", "/api/v1/orders/"+bid, "bob", nil).Str("status"))

	// A payment after the shopper cancelled: recorded refund_due, and
	// Alipay is told success (it is recorded; the refund is the shop's).
	cid, _ := s.pendingOrder(sku, "carol")
	cref := s.reference("carol", cid)
	require.Equal(t, http.StatusOK, s.do(0, "POST", "/api/v1/orders/"+cid+"/cancel", "carol", nil).Status)
	r = s.alipay(paytest.AlipayParams(alipayApp, "c1", "T-c1", cref, "999.00"), nil)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	assert.Equal(t, "success", r.Raw)
	ps = s.payments(cid)
	require.Len(t, ps, 1)
	assert.Equal(t, order.PaymentRefundDue, ps[0].Status)
	assert.Equal(t, order.StatusCancelled, ps[0].Reason)

	rep := s.drained(sku)
	assert.Equal(t, int64(1), rep.Paid, "the audit counts the order Alipay paid")
	assert.True(t, rep.Consistent, "%+v", rep)
	m := s.do(0, "GET", "/metrics", "", nil).Raw
	for _, series := range []string{paymentsCounted(order.PaymentApplied, ""), paymentsCounted(order.PaymentRefundDue, order.StatusCancelled),
		paymentsCounted(order.PaymentMismatch, order.ReasonAmount)} {
		assert.Contains(t, m, series+" 1", "the payment metrics count Alipay's notifications")
	}
}

func with(p map[string]string, k, v string) map[string]string {
	p[k] = v
	return p
}

// wechat is WeChat Pay's notification of a payment of total fen for
// reference, transaction tx, signed with the current key, now.
func wechat(id, tx, reference string, total int64) paytest.WeChatPay {
	return paytest.WeChatPay{ID: id, Plain: paytest.WeChatPayTransaction(wxMch, tx, reference, total, "CNY"),
		APIv3Key: wxAPIv3Key, Signer: paytest.Keys()[0], Serial: wxSerial}
}

func (s *deployment) wechatpay(m paytest.WeChatPay) testutil.Reply {
	s.t.Helper()
	body, h := m.Build(s.t)
	return s.post("/webhooks/wechatpay", body, h)
}

// A sale paid end to end through WeChat Pay, and every bad input of the
// provider.
func TestASalePaidThroughWeChatPay(t *testing.T) {
	s := startWeChatPay(t, saleOpts{})
	sku := s.seed(10, 1)
	id, _ := s.pendingOrder(sku, "alice")
	ref := s.reference("alice", id)

	closed := wechat("EV-closed", "4200001", ref, 99900)
	closed.Plain["trade_state"] = "NOTPAY"
	r := s.wechatpay(closed)
	require.Equal(t, http.StatusNoContent, r.Status, r.Raw)
	assert.Empty(t, s.payments(id))

	for range 2 { // WeChat Pay retries until it reads a 2xx
		r = s.wechatpay(wechat("EV-paid", "4200001234202611270123456789", ref, 99900))
		require.Equal(t, http.StatusNoContent, r.Status, r.Raw)
		assert.Empty(t, r.Raw)
	}
	// The same transaction in a new notification, signed with the key
	// being rotated out, pretty-printed: nothing more.
	again := wechat("EV-again", "4200001234202611270123456789", ref, 99900)
	again.Signer, again.Serial, again.Indent = paytest.Keys()[1], wxOldSerial, true
	r = s.wechatpay(again)
	require.Equal(t, http.StatusNoContent, r.Status, r.Raw)
	assert.Equal(t, order.StatusPaid, s.do(0, "GET", "/api/v1/orders/"+id, "alice", nil).Str("status"))
	ps := s.payments(id)
	require.Len(t, ps, 1, "one payment, recorded once")
	assert.Equal(t, order.PaymentApplied, ps[0].Status)
	assert.Equal(t, "4200001234202611270123456789", ps[0].PaymentID)
	assert.Equal(t, "EV-paid", ps[0].WebhookID)

	bid, _ := s.pendingOrder(sku, "bob")
	bref := s.reference("bob", bid)
	forged, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	edit := func(f func(m *paytest.WeChatPay)) paytest.WeChatPay {
		m := wechat("EV-b", "4200002", bref, 99900)
		f(&m)
		return m
	}
	for name, tc := range map[string]struct {
		m      paytest.WeChatPay
		status int
		code   string
	}{
		"forged":            {edit(func(m *paytest.WeChatPay) { m.Signer = forged }), http.StatusUnauthorized, "invalid_signature"},
		"an unknown serial": {edit(func(m *paytest.WeChatPay) { m.Serial = "ABCDEF0123" }), http.StatusUnauthorized, "invalid_signature"},
		"stale":             {edit(func(m *paytest.WeChatPay) { m.At = time.Now().Add(-6 * time.Minute) }), http.StatusUnauthorized, "invalid_signature"},
		"another v3 key":    {edit(func(m *paytest.WeChatPay) { m.APIv3Key = "ffffffffffffffffffffffffffffffff" }), http.StatusUnauthorized, "undecryptable"},
		"another merchant":  {edit(func(m *paytest.WeChatPay) { m.Plain["mchid"] = "1900000001" }), http.StatusUnprocessableEntity, "wrong_merchant"},
		"no transaction id": {edit(func(m *paytest.WeChatPay) { delete(m.Plain, "transaction_id") }), http.StatusBadRequest, "invalid_request"},
		"unknown reference": {edit(func(m *paytest.WeChatPay) { m.Plain["out_trade_no"] = "A1b2C3d4E5f6G7h8" }), http.StatusNotFound, "not_found"},
	} {
		r := s.wechatpay(tc.m)
		assert.Equal(t, tc.status, r.Status, "%s: %s", name, r.Raw)
		assert.Equal(t, "FAIL", r.Str("code"), name)
		assert.Regexp(t, "^"+tc.code+": ", r.Str("message"), name)
	}
	body, h := wechat("EV-b2", "4200003", bref, 99900).Build(t)
	h.Del("Wechatpay-Signature")
	r = s.post("/webhooks/wechatpay", body, h)
	assert.Equal(t, http.StatusUnauthorized, r.Status, r.Raw)
	assert.Empty(t, s.payments(bid), "nothing written for a notification not verified or not the shop's")
	for _, m := range []paytest.WeChatPay{wechat("EV-b3", "4200004", bref, 100), func() paytest.WeChatPay {
		m := wechat("EV-b4", "4200005", bref, 99900)
		m.Plain["amount"] = map[string]any{"total": 99900, "currency": "USD"}
		return m
	}()} {
		r = s.wechatpay(m)
		assert.Equal(t, http.StatusUnprocessableEntity, r.Status, r.Raw)
		assert.Regexp(t, "^payment_mismatch: ", r.Str("message"))
	}
	ps = s.payments(bid)
	require.Len(t, ps, 2)
	assert.Equal(t, []string{order.ReasonAmount, order.ReasonCurrency}, []string{ps[0].Reason, ps[1].Reason})
	assert.Equal(t, order.StatusPendingPayment, s.do(0, "GET", "/api/v1/orders/"+bid, "bob", nil).Str("status"))

	cid, _ := s.pendingOrder(sku, "carol")
	cref := s.reference("carol", cid)
	require.Equal(t, http.StatusOK, s.do(0, "POST", "/api/v1/orders/"+cid+"/cancel", "carol", nil).Status)
	r = s.wechatpay(wechat("EV-c", "4200006", cref, 99900))
	require.Equal(t, http.StatusNoContent, r.Status, r.Raw)
	ps = s.payments(cid)
	require.Len(t, ps, 1)
	assert.Equal(t, order.PaymentRefundDue, ps[0].Status)

	rep := s.drained(sku)
	assert.Equal(t, int64(1), rep.Paid, "the audit counts the order WeChat Pay paid")
	assert.True(t, rep.Consistent, "%+v", rep)
	m := s.do(0, "GET", "/metrics", "", nil).Raw
	for _, series := range []string{paymentsCounted(order.PaymentApplied, ""), paymentsCounted(order.PaymentRefundDue, order.StatusCancelled)} {
		assert.Contains(t, m, series+" 1", "the payment metrics count WeChat Pay's notifications")
	}
	assert.Contains(t, m, paymentsCounted(order.PaymentMismatch, order.ReasonAmount)+" 1")
}

// A payment through either provider after the order's deadline is owed
// back, and the provider is told it is recorded.
func TestProviderPaymentsAfterTheDeadline(t *testing.T) {
	env := map[string]string{"SECKILL_ORDER_PAYMENT_TIMEOUT": "1s", "SECKILL_WORKER_SWEEP_INTERVAL": "100ms"}
	t.Run("alipay", func(t *testing.T) {
		s := startAlipay(t, saleOpts{env: env})
		sku := s.seed(5, 1)
		id, _ := s.pendingOrder(sku, "dave")
		ref := s.reference("dave", id)
		s.waitStatus("dave", id, order.StatusExpired)
		r := s.alipay(paytest.AlipayParams(alipayApp, "late", "T-late", ref, "999.00"), nil)
		require.Equal(t, http.StatusOK, r.Status, r.Raw)
		assert.Equal(t, "success", r.Raw)
		ps := s.payments(id)
		require.Len(t, ps, 1)
		assert.Equal(t, order.PaymentRefundDue, ps[0].Status)
	})
	t.Run("wechatpay", func(t *testing.T) {
		s := startWeChatPay(t, saleOpts{env: env})
		sku := s.seed(5, 1)
		id, _ := s.pendingOrder(sku, "dave")
		ref := s.reference("dave", id)
		s.waitStatus("dave", id, order.StatusExpired)
		r := s.wechatpay(wechat("EV-late", "4200009", ref, 99900))
		require.Equal(t, http.StatusNoContent, r.Status, r.Raw)
		ps := s.payments(id)
		require.Len(t, ps, 1)
		assert.Equal(t, order.PaymentRefundDue, ps[0].Status)
	})
}

// A notification for an order accepted a moment ago and not in SQL yet is
// refused in each provider's words, with 503, and nothing is recorded: the
// provider sends it again, and it is applied then.
func TestProviderPaymentsForAQueuedOrder(t *testing.T) {
	t.Run("alipay", func(t *testing.T) {
		s := startAlipay(t, saleOpts{noWorkers: true})
		id := s.order(0, s.seed(5, 1), "frank")
		ref, ok := orderid.Reference(id)
		require.True(t, ok)
		r := s.alipay(paytest.AlipayParams(alipayApp, "q1", "T-q1", ref, "999.00"), nil)
		assert.Equal(t, http.StatusServiceUnavailable, r.Status, r.Raw)
		assert.Equal(t, "fail", r.Raw)
		assert.Empty(t, s.payments(id))
	})
	t.Run("wechatpay", func(t *testing.T) {
		s := startWeChatPay(t, saleOpts{noWorkers: true})
		id := s.order(0, s.seed(5, 1), "frank")
		ref, ok := orderid.Reference(id)
		require.True(t, ok)
		r := s.wechatpay(wechat("EV-q", "4200010", ref, 99900))
		assert.Equal(t, http.StatusServiceUnavailable, r.Status, r.Raw)
		assert.Regexp(t, "^order_queued: ", r.Str("message"))
		assert.NotEmpty(t, r.Header.Get("Retry-After"))
		assert.Empty(t, s.payments(id))
	})
}

// The same notification delivered several times at once (a provider's
// retry overtaking the first delivery) is recorded once and pays once.
func TestAProviderNotificationDeliveredConcurrently(t *testing.T) {
	s := startWeChatPay(t, saleOpts{})
	sku := s.seed(5, 1)
	id, _ := s.pendingOrder(sku, "gina")
	ref := s.reference("gina", id)
	body, h := wechat("EV-twice", "4200020", ref, 99900).Build(t)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			req, err := http.NewRequest(http.MethodPost, s.urls[0]+"/webhooks/wechatpay", bytes.NewReader(body))
			if !assert.NoError(t, err) {
				return
			}
			req.Header = h.Clone()
			r, err := s.caller().Send(req)
			if assert.NoError(t, err) {
				assert.Equal(t, http.StatusNoContent, r.Status, r.Raw)
			}
		})
	}
	wg.Wait()
	ps := s.payments(id)
	require.Len(t, ps, 1)
	assert.Equal(t, order.PaymentApplied, ps[0].Status)
	rep := s.drained(sku)
	assert.Equal(t, int64(1), rep.Paid)
	assert.True(t, rep.Consistent, "%+v", rep)
}
