package wechatpay

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/seckill/seckill/internal/payment/notify"
)

// FuzzNotification: whatever the body, the headers and the plaintext of
// the resource, a notification or an error wrapping one of notify's
// sentinels, never a panic, and a notification within bounds. The body is
// also opened as if its signature had verified (signing each input would
// make the fuzzer too slow to reach anything), so the fuzzer reaches the
// envelope and the decryption; the plaintext is sealed with the API v3
// key, so it reaches the transaction's fields.
func FuzzNotification(f *testing.F) {
	body, h := message{}.build(f)
	plain, _ := json.Marshal(docTransaction())
	f.Add(body, plain, h.Get(HeaderTimestamp), h.Get(HeaderSerial), h.Get(HeaderSignature))
	f.Add([]byte(`{"id":"EV-1","event_type":"TRANSACTION.SUCCESS","resource":{"algorithm":"AEAD_AES_256_GCM","nonce":"abcdefghijkl","ciphertext":"AAAA"}}`),
		[]byte(`{"mchid":"1230000109","amount":{"total":1e99}}`), "-1", "x", "!!")
	f.Add([]byte(`[]`), []byte(`null`), "99999999999999999999", "", "")
	v := verifier(f)
	f.Fuzz(func(t *testing.T, body, plain []byte, ts, serial, sig string) {
		hd := http.Header{}
		hd.Set(HeaderTimestamp, ts)
		hd.Set(HeaderNonce, "n")
		hd.Set(HeaderSerial, serial)
		hd.Set(HeaderSignature, sig)
		n, err := v.Verify(body, hd)
		check(t, n, err)
		n, err = v.open(body)
		check(t, n, err)
		n, err = v.decode("EV-1", plain)
		check(t, n, err)
		sealed, err := json.Marshal(map[string]any{"id": "EV-1", "event_type": EventTransactionSuccess, "resource": encrypt(t, apiV3Key, plain)})
		if err != nil {
			t.Fatal(err)
		}
		n, err = v.open(sealed)
		check(t, n, err)
	})
}

func check(t *testing.T, n notify.Notification, err error) {
	t.Helper()
	if err != nil {
		if !errors.Is(err, notify.ErrMalformed) && !errors.Is(err, notify.ErrSignature) &&
			!errors.Is(err, notify.ErrMerchant) && !errors.Is(err, notify.ErrUndecryptable) {
			t.Fatalf("an error of no known kind: %v", err)
		}
		if len(err.Error()) > 300 {
			t.Fatalf("an unbounded error: %d bytes", len(err.Error()))
		}
		return
	}
	if !notify.Token(n.ID, notify.MaxIDLen) || !notify.State(n.State) {
		t.Fatalf("a notification out of bounds: %+v", n)
	}
	if n.Paid && (!notify.Token(n.PaymentID, notify.MaxIDLen) || !notify.Reference(n.Reference) || n.AmountCents < 0 || len(n.Currency) != 3) {
		t.Fatalf("a payment out of bounds: %+v", n)
	}
}
