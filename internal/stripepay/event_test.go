package stripepay

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/seckill/seckill/internal/order"
	swebhook "github.com/seckill/seckill/internal/webhook"
)

const (
	secretA = "whsec_testSecretAAAAAAAAAAAAAAAA"
	secretB = "whsec_testSecretBBBBBBBBBBBBBBBB"
)

func succeeded(md map[string]string) []byte {
	b, _ := json.Marshal(map[string]any{"id": "evt_1", "object": "event", "type": EventSucceeded,
		"data": map[string]any{"object": map[string]any{"id": "pi_1", "object": "payment_intent",
			"amount": 1200, "amount_received": 1200, "currency": "eur", "metadata": md}}})
	return b
}

func sign(body []byte, secret string, at time.Time) string {
	return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: at}).Header
}

func TestNoticeReadsASucceededPaymentIntent(t *testing.T) {
	c := New(Options{SecretKey: "sk_test_x", WebhookSecrets: []string{secretA, secretB}})
	body := succeeded(map[string]string{MetaOrderID: "42-0123456789abcdefghjkmnpq", MetaReference: "0000000000000000000000000000AbCd"})
	for _, secret := range []string{secretA, secretB} {
		n, ok, err := c.Notice(body, sign(body, secret, time.Now()))
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, order.PaymentNotice{WebhookID: "evt_1", PaymentID: "pi_1", OrderID: "42-0123456789abcdefghjkmnpq",
			PaymentReference: "0000000000000000000000000000AbCd", AmountCents: 1200, Currency: "EUR"}, n)
	}
	// Both signatures of a rolled secret in one header: one match is enough.
	both := sign(body, "whsec_unknownUnknownUnknown000", time.Now()) + ",v1=" + strings.Split(sign(body, secretB, time.Now()), "v1=")[1]
	_, ok, err := c.Notice(body, both)
	require.NoError(t, err)
	assert.True(t, ok)
}

func TestNoticeRefusesWhatStripeDidNotSign(t *testing.T) {
	c := New(Options{SecretKey: "sk_test_x", WebhookSecrets: []string{secretA, secretB}})
	body := succeeded(map[string]string{MetaOrderID: "1-0123456789abcdefghjkmnpq"})
	for name, header := range map[string]string{
		"none":            "",
		"malformed":       "garbage",
		"no v1":           "t=" + "1700000000",
		"another secret":  sign(body, "whsec_someoneElsesSecret0000000", time.Now()),
		"stale":           sign(body, secretA, time.Now().Add(-Tolerance-time.Minute)),
		"another body":    sign(append([]byte(" "), body...), secretA, time.Now()),
		"a bad timestamp": "t=x,v1=00",
	} {
		_, ok, err := c.Notice(body, header)
		assert.False(t, ok, name)
		assert.ErrorIs(t, err, ErrSignature, name)
		assert.ErrorIs(t, err, swebhook.ErrSignature, name)
		assert.NotContains(t, err.Error(), "testSecret", "%s: the error shows a secret", name)
	}
	_, _, err := New(Options{}).Notice(body, sign(body, secretA, time.Now()))
	assert.ErrorIs(t, err, ErrSignature, "no secret configured: nothing verifies")
}

func TestDecodeEvent(t *testing.T) {
	md := `"metadata":{"order_id":"1-0123456789abcdefghjkmnpq"}`
	for name, tc := range map[string]struct {
		body    string
		ok      bool
		invalid bool
	}{
		"succeeded":            {body: `{"id":"evt_1","type":"payment_intent.succeeded","data":{"object":{"id":"pi_1","object":"payment_intent","amount_received":5,"currency":"usd",` + md + `}}}`, ok: true},
		"another type":         {body: `{"id":"evt_1","type":"charge.succeeded","data":{"object":{"id":"ch_1","object":"charge"}}}`},
		"not an order's":       {body: `{"id":"evt_1","type":"payment_intent.succeeded","data":{"object":{"id":"pi_1","object":"payment_intent","amount_received":5,"currency":"usd","metadata":{"shop":"x"}}}}`},
		"no metadata":          {body: `{"id":"evt_1","type":"payment_intent.succeeded","data":{"object":{"id":"pi_1","object":"payment_intent","amount_received":5,"currency":"usd"}}}`},
		"not JSON":             {body: `{"id":`, invalid: true},
		"an array":             {body: `[]`, invalid: true},
		"trailing data":        {body: `{"id":"evt_1","type":"x"}{}`, invalid: true},
		"no id":                {body: `{"type":"charge.succeeded"}`, invalid: true},
		"no data":              {body: `{"id":"evt_1","type":"payment_intent.succeeded"}`, invalid: true},
		"data.object null":     {body: `{"id":"evt_1","type":"payment_intent.succeeded","data":{"object":null}}`, invalid: true},
		"a charge":             {body: `{"id":"evt_1","type":"payment_intent.succeeded","data":{"object":{"id":"ch_1","object":"charge",` + md + `}}}`, invalid: true},
		"no amount received":   {body: `{"id":"evt_1","type":"payment_intent.succeeded","data":{"object":{"id":"pi_1","object":"payment_intent","currency":"usd",` + md + `}}}`, invalid: true},
		"amount a string":      {body: `{"id":"evt_1","type":"payment_intent.succeeded","data":{"object":{"id":"pi_1","object":"payment_intent","amount_received":"5","currency":"usd",` + md + `}}}`, invalid: true},
		"metadata not strings": {body: `{"id":"evt_1","type":"payment_intent.succeeded","data":{"object":{"id":"pi_1","object":"payment_intent","amount_received":5,"metadata":{"order_id":1}}}}`, invalid: true},
		"type a number":        {body: `{"id":"evt_1","type":1}`, invalid: true},
	} {
		_, ok, err := DecodeEvent([]byte(tc.body))
		assert.Equal(t, tc.ok, ok, name)
		if tc.invalid {
			assert.ErrorIs(t, err, order.ErrInvalid, name)
		} else {
			assert.NoError(t, err, name)
		}
	}
}

// FuzzStripeEvent: DecodeEvent never panics; it acts on an event or refuses
// it as invalid, never both, and what it acts on names its order.
func FuzzStripeEvent(f *testing.F) {
	f.Add(succeeded(map[string]string{MetaOrderID: "1-0123456789abcdefghjkmnpq"}))
	f.Add(succeeded(map[string]string{MetaReference: "0000000000000000000000000000AbCd"}))
	f.Add([]byte(`{"id":"evt_1","type":"charge.succeeded"}`))
	f.Add([]byte(`{"id":"evt_1","type":"payment_intent.succeeded","data":{"object":null}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		n, ok, err := DecodeEvent(body)
		if err != nil && (ok || !errors.Is(err, order.ErrInvalid)) {
			t.Fatalf("ok %v with %v", ok, err)
		}
		if ok && (n.WebhookID == "" || n.PaymentID == "" || n.OrderID == "" && n.PaymentReference == "") {
			t.Fatalf("acts on %+v", n)
		}
	})
}
