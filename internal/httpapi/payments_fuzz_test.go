package httpapi

import (
	"context"
	"encoding/base64"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/config"
	"github.com/seckill/seckill/internal/order"
	"github.com/seckill/seckill/internal/webhook"
)

// stubPayments stands in for order.Service's payments: it runs the notice's
// own validation, counts what would reach the store, and records nothing.
type stubPayments struct{ applied atomic.Int64 }

func (s *stubPayments) ApplyPayment(_ context.Context, n order.PaymentNotice) (*order.PaymentResult, error) {
	if err := n.Validate(); err != nil {
		return nil, err
	}
	s.applied.Add(1)
	return &order.PaymentResult{Payment: order.Payment{PaymentID: n.PaymentID, WebhookID: n.WebhookID, OrderID: n.OrderID,
		AmountCents: n.AmountCents, Currency: n.Currency, Status: order.PaymentApplied}, OrderStatus: order.StatusPaid}, nil
}

func (s *stubPayments) Payments(context.Context, order.PaymentQuery, uint64, int) ([]order.Payment, uint64, error) {
	return nil, 0, nil
}

func (s *stubPayments) Checkout(context.Context, string, string) (*order.Checkout, error) {
	return nil, order.ErrNotFound
}

// webhookID is the form of a webhook-id seckill takes.
var webhookID = regexp.MustCompile(`^[A-Za-z0-9_.:@-]{1,128}$`)

var fuzzPaySecret = "whsec_" + base64.StdEncoding.EncodeToString([]byte("fuzz-payment-side-key-0123456789"))

// FuzzPaymentWebhook: POST /webhooks/payments answers any body and
// signature headers with a 4xx, or 200 for a signed, well-formed
// notification; nothing reaches the store unless the headers sign the
// body. sign makes the fuzzer's headers a valid signature of its body (to
// reach the decoding), with the timestamp moved by skew seconds.
func FuzzPaymentWebhook(f *testing.F) {
	verifier, err := webhook.NewVerifier([]string{fuzzPaySecret})
	if err != nil {
		f.Fatal(err)
	}
	signer, err := webhook.NewSigner(fuzzPaySecret)
	if err != nil {
		f.Fatal(err)
	}
	pay := &stubPayments{}
	h := New(Deps{HTTP: config.HTTP{MaxBodyBytes: 16 << 10, GinMode: "release"}, Payments: pay,
		PaymentMode: config.PaymentWebhook, Webhooks: verifier})
	good := `{"type":"payment.succeeded","data":{"order_id":"1-06h102kcdfan8t3h000fsreq","amount_cents":99900,"currency":"EUR","payment_id":"pi_1"}}`
	for _, b := range append([]string{good,
		`{"type":"payment.succeeded","data":{"order_id":"","amount_cents":-1,"currency":"EURO","payment_id":"p q"}}`,
		`{"type":"payment.succeeded","data":{"order_id":"x","amount_cents":1e400,"currency":"EUR","payment_id":"p"}}`,
		`{"type":"payment.succeeded","data":null}`, `{"type":"payment.refunded","data":{}}`,
	}, hostile...) {
		f.Add(b, "msg_1", "", "", true, int64(0))
		f.Add(b, "msg_1", strconv.FormatInt(time.Now().Unix(), 10), "v1,AAAA", false, int64(0))
	}
	f.Add(good, "msg_1", "", "", true, int64(-301))
	f.Add(good, "", "", "", true, int64(0))
	f.Add(good, strings.Repeat("m", 129), "", "", true, int64(0))
	f.Fuzz(func(t *testing.T, body, id, ts, sig string, sign bool, skew int64) {
		headers := map[string]string{"webhook-id": id, "webhook-timestamp": ts, "webhook-signature": sig}
		signed := false
		if sign && skew > -1e6 && skew < 1e6 {
			hd, err := signer.Headers(id, time.Now().Add(time.Duration(skew)*time.Second), []byte(body))
			if err != nil {
				t.Fatal(err)
			}
			for k := range headers {
				headers[k] = hd.Get(k)
			}
			signed = id != "" && skew > -290 && skew < 290
		}
		before := pay.applied.Load()
		w := send(h, http.MethodPost, "/webhooks/payments", []byte(body), headers)
		reached := pay.applied.Load() > before
		switch {
		case w.Code >= 500:
			t.Fatalf("%q %v: %d %s", body, headers, w.Code, w.Body)
		case w.Code == http.StatusOK && !reached:
			t.Fatalf("%q: 200 without reaching the store", body)
		case reached && !signed && verifier.Verify([]byte(body), http.Header{"Webhook-Id": {headers["webhook-id"]},
			"Webhook-Timestamp": {headers["webhook-timestamp"]}, "Webhook-Signature": {headers["webhook-signature"]}}) != nil:
			t.Fatalf("%q %v: reached the store unsigned", body, headers)
		case signed && body == good && webhookID.MatchString(id) && w.Code != http.StatusOK:
			t.Fatalf("a signed, valid notification: %d %s", w.Code, w.Body)
		}
	})
}
