package alipay

import (
	"crypto/rand"
	"crypto/rsa"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/payment/notify"
	"github.com/seckill/seckill/internal/payment/paytest"
)

const appID = "2021000123456789"

var keys = paytest.Keys

// notification is an asynchronous notification of a paid trade, as
// Alipay's documentation shows one.
func notification() map[string]string {
	return paytest.AlipayParams(appID, "2026112700222154558062841453413601", "2026112722001424331427014565", "p4Xk2mQ9sT7vW1yZ", "88.88")
}

func signed(t testing.TB, params map[string]string, key *rsa.PrivateKey) []byte {
	t.Helper()
	return paytest.AlipayBody(t, params, key)
}

func verifier(t testing.TB) *Verifier {
	t.Helper()
	v, err := NewVerifier(appID, []*rsa.PublicKey{&keys()[1].PublicKey, &keys()[0].PublicKey})
	require.NoError(t, err)
	return v
}

func TestAPaidTradeVerifies(t *testing.T) {
	v := verifier(t)
	for _, key := range keys() {
		for _, status := range []string{TradeSuccess, TradeFinished} {
			p := notification()
			p["trade_status"] = status
			n, err := v.Verify(signed(t, p, key), nil)
			require.NoError(t, err, status)
			assert.Equal(t, notify.Notification{ID: "2026112700222154558062841453413601", PaymentID: "2026112722001424331427014565",
				Reference: "p4Xk2mQ9sT7vW1yZ", AmountCents: 8888, Currency: "CNY", State: status, Paid: true}, n)
		}
	}
}

// The other states are verified and acknowledged, and are no payment.
func TestOtherTradeStatesAreNoPayment(t *testing.T) {
	v := verifier(t)
	for _, status := range []string{"WAIT_BUYER_PAY", "TRADE_CLOSED", "SOME_NEW_STATE"} {
		p := notification()
		p["trade_status"] = status
		n, err := v.Verify(signed(t, p, keys()[0]), nil)
		require.NoError(t, err, status)
		assert.False(t, n.Paid, status)
		assert.Equal(t, status, n.State)
	}
}

// The content signed, for the documented example: sorted by name, sign,
// sign_type and empty values left out, values decoded and unescaped.
func TestContent(t *testing.T) {
	form, err := url.ParseQuery("sign=abc&sign_type=RSA2&total_amount=0.80&b=&app_id=2015&subject=a+b%26c%3Dd&out_trade_no=x")
	require.NoError(t, err)
	assert.Equal(t, "app_id=2015&out_trade_no=x&subject=a b&c=d&total_amount=0.80", string(Content(form)))
}

func TestNotificationsThatDoNotVerify(t *testing.T) {
	v := verifier(t)
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	good := string(signed(t, notification(), keys()[0]))
	form, err := url.ParseQuery(good)
	require.NoError(t, err)
	with := func(k, val string) string {
		f, _ := url.ParseQuery(good)
		f.Set(k, val)
		return f.Encode()
	}
	without := func(k string) string {
		f, _ := url.ParseQuery(good)
		f.Del(k)
		return f.Encode()
	}
	for name, tc := range map[string]struct {
		body string
		want error
	}{
		"signed with another key": {string(signed(t, notification(), other)), notify.ErrSignature},
		"amount changed":          {with("total_amount", "0.01"), notify.ErrSignature},
		"reference changed":       {with("out_trade_no", "someone-else"), notify.ErrSignature},
		"a parameter added":       {good + "&extra=1", notify.ErrSignature},
		"no sign":                 {without("sign"), notify.ErrSignature},
		"sign not base64":         {with("sign", "!!!"), notify.ErrSignature},
		"no sign_type":            {without("sign_type"), notify.ErrSignature},
		"sign_type RSA (SHA-1)":   {with("sign_type", "RSA"), notify.ErrSignature},
		"another app":             {string(signed(t, merge(notification(), "app_id", "2021000999999999"), keys()[0])), notify.ErrMerchant},
		"an app id that is junk":  {string(signed(t, merge(notification(), "app_id", "<script>"), keys()[0])), notify.ErrMerchant},
		"empty":                   {"", notify.ErrMalformed},
		"not a form":              {"%zz", notify.ErrMalformed},
		"a semicolon":             {"a=1;b=2", notify.ErrMalformed},
		"sign twice":              {good + "&sign=" + url.QueryEscape(form.Get("sign")), notify.ErrMalformed},
		"too many parameters":     {manyParams(), notify.ErrMalformed},
	} {
		_, err := v.Verify([]byte(tc.body), nil)
		require.ErrorIs(t, err, tc.want, name)
		assert.NotContains(t, err.Error(), form.Get("sign"), "%s: the signature is never quoted", name)
	}
}

func manyParams() string {
	var b strings.Builder
	for i := range MaxParams + 1 {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString("k")
		b.WriteString(strings.Repeat("x", i))
		b.WriteString("=1")
	}
	return b.String()
}

func merge(p map[string]string, k, v string) map[string]string {
	p[k] = v
	return p
}

// Fields a signed notification must have, bounded: a 400, never a
// payment.
func TestSignedButMalformed(t *testing.T) {
	v := verifier(t)
	for name, tc := range map[string][2]string{
		"no notify_id":          {"notify_id", ""},
		"notify_id with spaces": {"notify_id", "a b"},
		"no trade_no":           {"trade_no", ""},
		"long trade_no":         {"trade_no", strings.Repeat("1", notify.MaxIDLen+1)},
		"no out_trade_no":       {"out_trade_no", ""},
		"out_trade_no with .":   {"out_trade_no", "pay_1.2"},
		"no trade_status":       {"trade_status", ""},
		"a trade_status <b>":    {"trade_status", "<b>"},
		"no total_amount":       {"total_amount", ""},
		"amount 3 decimals":     {"total_amount", "88.888"},
		"amount exponent":       {"total_amount", "8.8e1"},
		"amount negative":       {"total_amount", "-88.88"},
		"amount float junk":     {"total_amount", "NaN"},
	} {
		body := signed(t, merge(notification(), tc[0], tc[1]), keys()[0])
		_, err := v.Verify(body, nil)
		assert.ErrorIs(t, err, notify.ErrMalformed, name)
	}
}

func TestFen(t *testing.T) {
	for in, want := range map[string]int64{
		"88.88": 8888, "0.01": 1, "0.1": 10, "0.10": 10, "100": 10000, "0": 0, "007.5": 750,
		"9999999999999.99": 999999999999999, "1.00": 100, "19.99": 1999,
	} {
		got, err := Fen(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", ".", ".5", "5.", "1.234", "-1", "+1", "1e2", "1E2", " 1", "1 ", "1,00",
		"0x10", "1.2.3", "١٢", "10000000000000", "1_000", "Inf", "NaN", "1.-1", "1.+1"} {
		_, err := Fen(in)
		assert.Error(t, err, "%q", in)
	}
}

func TestNewVerifierNeedsAppAndKey(t *testing.T) {
	_, err := NewVerifier("", []*rsa.PublicKey{&keys()[0].PublicKey})
	assert.Error(t, err)
	_, err = NewVerifier(appID, nil)
	assert.Error(t, err)
}
