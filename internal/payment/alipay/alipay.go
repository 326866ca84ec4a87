// Package alipay verifies Alipay's asynchronous payment notifications
// (异步通知): a form POST signed RSA2 (SHA256withRSA, PKCS #1 v1.5) over its
// parameters — all but sign and sign_type, those with an empty value left
// out, sorted by name and joined as k=v&k=v with the values as sent, URL
// decoded — with the signature in sign, in standard base64.
//
// A verified notification names the merchant's app (app_id, checked), the
// trade (trade_no, the merchant's out_trade_no), its state (trade_status)
// and total_amount in yuan as decimal text, which becomes fen exactly,
// without floating point. TRADE_SUCCESS and TRADE_FINISHED are payments;
// every other state (WAIT_BUYER_PAY, TRADE_CLOSED) is verified and
// acknowledged, and is not one.
//
// Only the standard library's crypto is used: Alipay publishes no Go SDK.
package alipay

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/seckill/seckill/internal/payment/notify"
)

// Currency is the currency of every Alipay notification's total_amount.
const Currency = "CNY"

// The trade states that are payments.
const (
	TradeSuccess  = "TRADE_SUCCESS"  // paid, refundable
	TradeFinished = "TRADE_FINISHED" // paid, no longer refundable
)

// SignType is the only signature type accepted: RSA2, SHA256withRSA.
const SignType = "RSA2"

// MaxParams bounds how many parameters a notification may have; Alipay
// sends about thirty.
const MaxParams = 100

// Verifier verifies the notifications of one app, signed with any of
// Alipay's public keys (more than one during a rotation).
type Verifier struct {
	appID string
	keys  []*rsa.PublicKey
}

// NewVerifier returns the Verifier of app appID's notifications, signed
// with one of keys.
func NewVerifier(appID string, keys []*rsa.PublicKey) (*Verifier, error) {
	if appID == "" || len(keys) == 0 {
		return nil, errors.New("alipay: an app id and at least one public key are needed")
	}
	return &Verifier{appID: appID, keys: keys}, nil
}

// Verify returns the notification that body, a form Alipay POSTed, is. The
// headers are not read: Alipay signs the body only. Errors wrap
// notify.ErrMalformed (not a form, a parameter twice, missing or out of
// bounds), notify.ErrSignature (sign or sign_type missing, or not signed
// by Alipay with a configured key) or notify.ErrMerchant (another app's
// notification); none quotes the signature.
func (v *Verifier) Verify(body []byte, _ http.Header) (notify.Notification, error) {
	form, err := parseForm(body)
	if err != nil {
		return notify.Notification{}, err
	}
	if err := v.verifySign(form); err != nil {
		return notify.Notification{}, err
	}
	if got := form.Get("app_id"); got != v.appID {
		if !notify.Token(got, 32) {
			return notify.Notification{}, fmt.Errorf("%w: app_id is not payment.alipay.app_id", notify.ErrMerchant)
		}
		return notify.Notification{}, fmt.Errorf("%w: app_id %s is not payment.alipay.app_id", notify.ErrMerchant, got)
	}
	return decode(form)
}

// parseForm parses an application/x-www-form-urlencoded body in which no
// parameter comes twice: a repeated one would make what is signed
// ambiguous.
func parseForm(body []byte) (url.Values, error) {
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, fmt.Errorf("%w: the body must be a form (application/x-www-form-urlencoded)", notify.ErrMalformed)
	}
	if len(form) == 0 || len(form) > MaxParams {
		return nil, fmt.Errorf("%w: the body must be a form of 1 to %d parameters", notify.ErrMalformed, MaxParams)
	}
	for k, vs := range form {
		if len(vs) != 1 {
			if !notify.Token(k, 64) {
				return nil, fmt.Errorf("%w: a parameter comes more than once", notify.ErrMalformed)
			}
			return nil, fmt.Errorf("%w: parameter %s comes more than once", notify.ErrMalformed, k)
		}
	}
	return form, nil
}

// verifySign checks sign against the content Alipay signs.
func (v *Verifier) verifySign(form url.Values) error {
	sign := form.Get("sign")
	if sign == "" {
		return fmt.Errorf("%w: sign is missing", notify.ErrSignature)
	}
	if st := form.Get("sign_type"); st != SignType {
		return fmt.Errorf("%w: sign_type must be %s", notify.ErrSignature, SignType)
	}
	sig, err := base64.StdEncoding.DecodeString(sign)
	if err != nil {
		return fmt.Errorf("%w: sign is not base64", notify.ErrSignature)
	}
	digest := sha256.Sum256(Content(form))
	for _, k := range v.keys {
		if rsa.VerifyPKCS1v15(k, crypto.SHA256, digest[:], sig) == nil {
			return nil
		}
	}
	return fmt.Errorf("%w: sign does not verify with payment.alipay.public_key", notify.ErrSignature)
}

// Content is what Alipay signs of a notification's parameters: every one
// but sign and sign_type whose value is not empty, sorted by name, as
// name=value joined with &, values as sent (URL decoded, in the
// notification's charset: the bytes are kept as they are).
func Content(form url.Values) []byte {
	keys := make([]string, 0, len(form))
	for k, vs := range form {
		if k == "sign" || k == "sign_type" || len(vs) == 0 || vs[0] == "" {
			continue
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(form[k][0])
	}
	return []byte(b.String())
}

// decode reads a verified notification's fields.
func decode(form url.Values) (notify.Notification, error) {
	n := notify.Notification{
		ID:        form.Get("notify_id"),
		PaymentID: form.Get("trade_no"),
		Reference: form.Get("out_trade_no"),
		State:     form.Get("trade_status"),
		Currency:  Currency,
	}
	switch {
	case !notify.Token(n.ID, notify.MaxIDLen):
		return notify.Notification{}, fmt.Errorf("%w: notify_id must be 1 to %d letters, digits or - _ . : @", notify.ErrMalformed, notify.MaxIDLen)
	case !notify.Token(n.PaymentID, notify.MaxIDLen):
		return notify.Notification{}, fmt.Errorf("%w: trade_no must be 1 to %d letters, digits or - _ . : @", notify.ErrMalformed, notify.MaxIDLen)
	case !notify.Reference(n.Reference):
		return notify.Notification{}, fmt.Errorf("%w: out_trade_no must be 1 to %d letters, digits, _ or -", notify.ErrMalformed, notify.MaxReferenceLen)
	case !notify.State(n.State):
		return notify.Notification{}, fmt.Errorf("%w: trade_status must be a trade state such as %s", notify.ErrMalformed, TradeSuccess)
	}
	fen, err := Fen(form.Get("total_amount"))
	if err != nil {
		return notify.Notification{}, fmt.Errorf("%w: total_amount %w", notify.ErrMalformed, err)
	}
	n.AmountCents = fen
	n.Paid = n.State == TradeSuccess || n.State == TradeFinished
	return n, nil
}

// maxYuanDigits bounds the whole yuan of an amount: 13 digits keep its fen
// within an int64, far above what Alipay lets one trade be.
const maxYuanDigits = 13

// errAmount says what total_amount must be.
var errAmount = errors.New("must be yuan as decimal text with at most 2 decimals, e.g. 88.88")

// Fen converts an amount in yuan written as Alipay writes it — digits,
// optionally a point and one or two more ("88.88", "0.5", "100") — into
// fen, exactly. A sign, an exponent, a space, more than two decimals or
// more than 13 whole digits is an error.
func Fen(yuan string) (int64, error) {
	whole, frac, dot := strings.Cut(yuan, ".")
	if whole == "" || len(whole) > maxYuanDigits || (dot && (frac == "" || len(frac) > 2)) {
		return 0, errAmount
	}
	var fen int64
	for _, c := range []byte(whole) {
		if c < '0' || c > '9' {
			return 0, errAmount
		}
		fen = fen*10 + int64(c-'0')
	}
	for i := range 2 {
		fen *= 10
		if i < len(frac) {
			c := frac[i]
			if c < '0' || c > '9' {
				return 0, errAmount
			}
			fen += int64(c - '0')
		}
	}
	return fen, nil
}
