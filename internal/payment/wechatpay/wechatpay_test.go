package wechatpay

import (
	"crypto/rand"
	"crypto/rsa"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/payment/notify"
	"github.com/seckill/seckill/internal/payment/paytest"
)

const (
	mchID = "1230000109"
	// apiV3Key is the merchant's API v3 key: 32 characters it sets in the
	// merchant platform.
	apiV3Key = "0123456789abcdefABCDEF0123456789"
	// serial is the current platform certificate's serial; oldSerial's is
	// being rotated out.
	serial    = "5157F09EFDC096DE15EBE81A47057A7232F1B8E1"
	oldSerial = "3775B6A45ACD588826D15E583A95F5DD2C325A7B"
)

var keys = paytest.Keys

// now is the tests' clock.
var now = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

func verifier(t testing.TB) *Verifier {
	t.Helper()
	v, err := NewVerifier(Options{MchID: mchID, APIv3Key: []byte(apiV3Key), Now: func() time.Time { return now },
		PlatformKeys: map[string]*rsa.PublicKey{serial: &keys()[0].PublicKey, strings.ToLower(oldSerial): &keys()[1].PublicKey}})
	require.NoError(t, err)
	return v
}

// docTransaction is the plaintext of a payment notification's resource, as
// WeChat Pay's documentation shows one.
func docTransaction() map[string]any {
	return paytest.WeChatPayTransaction(mchID, "4200001234202611270123456789", "p4Xk2mQ9sT7vW1yZ", 8888, "CNY")
}

// message is a notification as WeChat Pay sends it, by default a payment
// signed with the current key, now.
type message struct {
	event     string
	plain     map[string]any
	key       string
	signer    *rsa.PrivateKey
	serial    string
	at        time.Time
	indent    bool
	algorithm string
}

func (m message) build(t testing.TB) ([]byte, http.Header) {
	t.Helper()
	if m.plain == nil {
		m.plain = docTransaction()
	}
	if m.key == "" {
		m.key = apiV3Key
	}
	if m.signer == nil {
		m.signer, m.serial = keys()[0], serial
	}
	if m.at.IsZero() {
		m.at = now
	}
	return paytest.WeChatPay{Event: m.event, Plain: m.plain, APIv3Key: m.key, Signer: m.signer, Serial: m.serial,
		At: m.at, Indent: m.indent, Algorithm: m.algorithm}.Build(t)
}

func encrypt(t testing.TB, key string, plain []byte) map[string]any {
	t.Helper()
	return paytest.Seal(t, key, plain)
}

func TestAPaymentVerifies(t *testing.T) {
	v := verifier(t)
	want := notify.Notification{ID: "EV-2018022511223320873", PaymentID: "4200001234202611270123456789",
		Reference: "p4Xk2mQ9sT7vW1yZ", AmountCents: 8888, Currency: "CNY", State: "SUCCESS", Paid: true}
	for name, m := range map[string]message{
		"compact":                     {},
		"pretty-printed":              {indent: true},
		"the key being rotated out":   {signer: keys()[1], serial: oldSerial},
		"a serial in lower case":      {signer: keys()[0], serial: strings.ToLower(serial)},
		"4m59s old":                   {at: now.Add(-4*time.Minute - 59*time.Second)},
		"4m59s ahead (a clock ahead)": {at: now.Add(4*time.Minute + 59*time.Second)},
	} {
		body, h := m.build(t)
		n, err := v.Verify(body, h)
		require.NoError(t, err, name)
		assert.Equal(t, want, n, name)
	}
}

// Other states and events are verified and acknowledged, and are no
// payment.
func TestOtherStatesAreNoPayment(t *testing.T) {
	v := verifier(t)
	for _, state := range []string{"NOTPAY", "CLOSED", "PAYERROR", "REFUND"} {
		p := docTransaction()
		p["trade_state"] = state
		n, err := v.Verify(message{plain: p}.build(t))
		require.NoError(t, err, state)
		assert.False(t, n.Paid, state)
	}
	n, err := v.Verify(message{event: "REFUND.SUCCESS", plain: map[string]any{"refund_id": "1"}}.build(t))
	require.NoError(t, err)
	assert.False(t, n.Paid)
	assert.Equal(t, "REFUND.SUCCESS", n.State)
}

func TestNotificationsThatDoNotVerify(t *testing.T) {
	v := verifier(t)
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	body, h := message{}.build(t)
	edited := func(f func(b []byte, h http.Header) ([]byte, http.Header)) func() ([]byte, http.Header) {
		return func() ([]byte, http.Header) {
			return f(append([]byte(nil), body...), h.Clone())
		}
	}
	drop := func(name string) func() ([]byte, http.Header) {
		return edited(func(b []byte, h http.Header) ([]byte, http.Header) { h.Del(name); return b, h })
	}
	set := func(name, val string) func() ([]byte, http.Header) {
		return edited(func(b []byte, h http.Header) ([]byte, http.Header) { h.Set(name, val); return b, h })
	}
	other2 := docTransaction()
	other2["mchid"] = "1900000001"
	noMch := docTransaction()
	delete(noMch, "mchid")
	for name, tc := range map[string]struct {
		req  func() ([]byte, http.Header)
		want error
	}{
		"signed with another key":    {func() ([]byte, http.Header) { return message{signer: other, serial: serial}.build(t) }, notify.ErrSignature},
		"an unknown serial":          {func() ([]byte, http.Header) { return message{signer: other, serial: "ABCDEF"}.build(t) }, notify.ErrSignature},
		"the other key's serial":     {func() ([]byte, http.Header) { return message{signer: keys()[0], serial: oldSerial}.build(t) }, notify.ErrSignature},
		"5m01s old":                  {func() ([]byte, http.Header) { return message{at: now.Add(-5*time.Minute - time.Second)}.build(t) }, notify.ErrSignature},
		"5m01s ahead":                {func() ([]byte, http.Header) { return message{at: now.Add(5*time.Minute + time.Second)}.build(t) }, notify.ErrSignature},
		"a body changed":             {edited(func(b []byte, h http.Header) ([]byte, http.Header) { return append(b, ' '), h }), notify.ErrSignature},
		"another nonce":              {set(HeaderNonce, "x"), notify.ErrSignature},
		"another timestamp":          {set(HeaderTimestamp, strconv.FormatInt(now.Unix()-1, 10)), notify.ErrSignature},
		"a timestamp not a number":   {set(HeaderTimestamp, "2026-11-27"), notify.ErrSignature},
		"a huge timestamp":           {set(HeaderTimestamp, "99999999999999999999"), notify.ErrSignature},
		"a signature not base64":     {set(HeaderSignature, "!!"), notify.ErrSignature},
		"a test signature":           {set(HeaderSignature, "WECHATPAY/SIGNTEST/"+h.Get(HeaderSignature)), notify.ErrSignature},
		"no timestamp":               {drop(HeaderTimestamp), notify.ErrSignature},
		"no nonce":                   {drop(HeaderNonce), notify.ErrSignature},
		"no signature":               {drop(HeaderSignature), notify.ErrSignature},
		"no serial":                  {drop(HeaderSerial), notify.ErrSignature},
		"another API v3 key":         {func() ([]byte, http.Header) { return message{key: "ffffffffffffffffffffffffffffffff"}.build(t) }, notify.ErrUndecryptable},
		"another algorithm":          {func() ([]byte, http.Header) { return message{algorithm: "AEAD_SM4_GCM"}.build(t) }, notify.ErrMalformed},
		"another merchant":           {func() ([]byte, http.Header) { return message{plain: other2}.build(t) }, notify.ErrMerchant},
		"a service provider's (sp_)": {func() ([]byte, http.Header) { return message{plain: noMch}.build(t) }, notify.ErrMalformed},
	} {
		b, hh := tc.req()
		_, err := v.Verify(b, hh)
		require.ErrorIs(t, err, tc.want, name)
		assert.NotContains(t, err.Error(), h.Get(HeaderSignature), name)
		assert.NotContains(t, err.Error(), apiV3Key, name)
	}
}

// Envelopes and plaintexts that are signed and sealed but not a
// notification: a 400, never a payment.
func TestSignedButMalformed(t *testing.T) {
	v := verifier(t)
	with := func(k string, val any) map[string]any {
		p := docTransaction()
		if val == nil {
			delete(p, k)
		} else {
			p[k] = val
		}
		return p
	}
	for name, p := range map[string]map[string]any{
		"no transaction_id":    with("transaction_id", nil),
		"a bad transaction_id": with("transaction_id", "a b"),
		"no out_trade_no":      with("out_trade_no", nil),
		"a long out_trade_no":  with("out_trade_no", strings.Repeat("a", notify.MaxReferenceLen+1)),
		"no trade_state":       with("trade_state", nil),
		"no amount":            with("amount", nil),
		"no total":             with("amount", map[string]any{"currency": "CNY"}),
		"a negative total":     with("amount", map[string]any{"total": -1, "currency": "CNY"}),
		"a fractional total":   with("amount", map[string]any{"total": 88.88, "currency": "CNY"}),
		"a total as text":      with("amount", map[string]any{"total": "8888", "currency": "CNY"}),
		"a huge total":         with("amount", map[string]any{"total": 1e30, "currency": "CNY"}),
		"no currency":          with("amount", map[string]any{"total": 1}),
		"a currency cny":       with("amount", map[string]any{"total": 1, "currency": "cny"}),
		"mchid a number":       with("mchid", 1230000109),
	} {
		_, err := v.Verify(message{plain: p}.build(t))
		require.ErrorIs(t, err, notify.ErrMalformed, name)
	}
	// Bodies that are not a notification, signed.
	for name, b := range map[string]string{
		"not JSON":     `{"id":`,
		"no id":        `{"event_type":"TRANSACTION.SUCCESS","resource":{}}`,
		"no event":     `{"id":"EV-1","resource":{}}`,
		"no resource":  `{"id":"EV-1","event_type":"TRANSACTION.SUCCESS"}`,
		"short nonce":  `{"id":"EV-1","event_type":"TRANSACTION.SUCCESS","resource":{"algorithm":"AEAD_AES_256_GCM","nonce":"abc","ciphertext":"AAAAAAAAAAAAAAAAAAAAAA=="}}`,
		"not base64":   `{"id":"EV-1","event_type":"TRANSACTION.SUCCESS","resource":{"algorithm":"AEAD_AES_256_GCM","nonce":"abcdefghijkl","ciphertext":"!!"}}`,
		"short cipher": `{"id":"EV-1","event_type":"TRANSACTION.SUCCESS","resource":{"algorithm":"AEAD_AES_256_GCM","nonce":"abcdefghijkl","ciphertext":"AAAA"}}`,
	} {
		_, err := v.Verify(signRaw(t, []byte(b)))
		require.ErrorIs(t, err, notify.ErrMalformed, name)
	}
}

// signRaw signs body as WeChat Pay would, whatever it is.
func signRaw(t testing.TB, body []byte) ([]byte, http.Header) {
	t.Helper()
	return body, paytest.WeChatPayHeaders(t, keys()[0], serial, now, paytest.NonceString(t, 32), body)
}

func TestNewVerifierNeedsItsSettings(t *testing.T) {
	pk := map[string]*rsa.PublicKey{serial: &keys()[0].PublicKey}
	for name, o := range map[string]Options{
		"no merchant":    {APIv3Key: []byte(apiV3Key), PlatformKeys: pk},
		"no key":         {MchID: mchID, APIv3Key: []byte(apiV3Key)},
		"a short v3 key": {MchID: mchID, APIv3Key: []byte("short"), PlatformKeys: pk},
	} {
		_, err := NewVerifier(o)
		assert.Error(t, err, name)
	}
}
