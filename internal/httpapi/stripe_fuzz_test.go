package httpapi

import (
	"net/http"
	"testing"
	"time"

	stripewebhook "github.com/stripe/stripe-go/v82/webhook"

	"github.com/seckill/seckill/internal/config"
	"github.com/seckill/seckill/internal/stripepay"
)

const fuzzStripeSecret = "whsec_fuzzStripeSigningSecret0123"

// FuzzStripeWebhook: POST /webhooks/stripe answers any body and
// Stripe-Signature with a 4xx, or 200; nothing reaches the store unless the
// header signs the body, and a signed succeeded event of an order's
// PaymentIntent does. sign makes the fuzzer's header a valid signature of
// its body, made skew seconds ago.
func FuzzStripeWebhook(f *testing.F) {
	pay := &stubPayments{}
	h := New(Deps{HTTP: config.HTTP{MaxBodyBytes: 16 << 10, GinMode: "release"}, Payments: pay,
		PaymentMode: config.PaymentStripe, Stripe: stripepay.New(stripepay.Options{WebhookSecrets: []string{fuzzStripeSecret}})})
	good := `{"id":"evt_1","type":"payment_intent.succeeded","data":{"object":{"id":"pi_1","object":"payment_intent","amount_received":99900,"currency":"eur","metadata":{"order_id":"1-06h102kcdfan8t3h000fsreq"}}}}`
	for _, b := range append([]string{good,
		`{"id":"evt_1","type":"charge.succeeded"}`,
		`{"id":"evt_1","type":"payment_intent.succeeded","data":{"object":null}}`,
		`{"id":"evt 1","type":"payment_intent.succeeded","data":{"object":{"id":"pi_1","object":"payment_intent","amount_received":-1,"currency":"euro","metadata":{"payment_reference":"x"}}}}`,
	}, hostile...) {
		f.Add(b, "", true, int64(0))
		f.Add(b, "t=1,v1=00", false, int64(0))
	}
	f.Add(good, "", true, int64(301))
	f.Fuzz(func(t *testing.T, body, sig string, sign bool, skew int64) {
		signed := false
		if sign && skew > -1e6 && skew < 1e6 {
			sig = stripewebhook.GenerateTestSignedPayload(&stripewebhook.UnsignedPayload{Payload: []byte(body),
				Secret: fuzzStripeSecret, Timestamp: time.Now().Add(-time.Duration(skew) * time.Second)}).Header
			signed = skew < 290
		}
		before := pay.applied.Load()
		w := send(h, http.MethodPost, "/webhooks/stripe", []byte(body), map[string]string{"Stripe-Signature": sig})
		reached := pay.applied.Load() > before
		switch {
		case w.Code >= 500:
			t.Fatalf("%q %q: %d %s", body, sig, w.Code, w.Body)
		case reached && !signed && stripewebhook.ValidatePayload([]byte(body), sig, fuzzStripeSecret) != nil:
			t.Fatalf("%q %q: reached the store unsigned", body, sig)
		case signed && body == good && (w.Code != http.StatusOK || !reached):
			t.Fatalf("a signed, valid event: %d %s", w.Code, w.Body)
		}
	})
}
