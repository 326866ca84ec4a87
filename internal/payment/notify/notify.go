// Package notify is what a payment provider's notification says once it is
// verified, in the same words for every provider: which payment, for which
// reference, how much. The provider packages (alipay, wechatpay) turn a
// provider's HTTP request into a Notification or an error wrapping one of
// this package's sentinels, which say how the request failed; the order
// service applies the Notification.
package notify

import "errors"

// Errors of a notification that is not verified; a provider package wraps
// them with what was wrong, never with a key or a signature.
var (
	// ErrMalformed is a request that is not a notification of the
	// provider: a body that does not parse, a field missing or out of
	// bounds, an algorithm the provider does not use.
	ErrMalformed = errors.New("payment notification malformed")
	// ErrSignature is a notification not signed by the provider with a
	// configured key: a signature or its header missing, forged or for
	// another body, an unknown key serial, or a timestamp too far from now.
	ErrSignature = errors.New("payment notification not signed by the provider")
	// ErrUndecryptable is a notification signed by the provider whose
	// encrypted part does not open with the configured key: the key is not
	// the merchant's, or the notification is another merchant's.
	ErrUndecryptable = errors.New("payment notification does not decrypt with the configured key")
	// ErrMerchant is a notification signed by the provider for another
	// merchant (app or merchant id) than the one configured.
	ErrMerchant = errors.New("payment notification for another merchant")
)

// Notification is a verified payment notification.
type Notification struct {
	// ID is the notification's id, the same on every retry of it (Alipay
	// notify_id, WeChat Pay id).
	ID string
	// PaymentID is the provider's id of the payment (Alipay trade_no,
	// WeChat Pay transaction_id): the same in every notification of the
	// payment.
	PaymentID string
	// Reference is the merchant's reference of the payment, which the
	// checkout gave the provider (out_trade_no).
	Reference string
	// AmountCents is the amount paid in the currency's smallest unit (fen
	// for CNY).
	AmountCents int64
	// Currency is an ISO 4217 code, e.g. CNY.
	Currency string
	// State is the provider's state of the payment (TRADE_SUCCESS,
	// SUCCESS), at most MaxStateLen bytes of letters, digits, _ and .
	State string
	// Paid reports a payment that succeeded. A notification that is not
	// Paid (a trade waiting or closed, another event) is verified and
	// acknowledged, and changes nothing.
	Paid bool
}

// Bounds on a notification's fields.
const (
	MaxIDLen        = 128 // ID and PaymentID
	MaxReferenceLen = 64
	MaxStateLen     = 32
)

// Token reports whether s is 1 to maxLen letters, digits or - _ . : @, as an
// id a notification carries must be.
func Token(s string, maxLen int) bool {
	if s == "" || len(s) > maxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '-' || c == '_' || c == '.' || c == ':' || c == '@') {
			return false
		}
	}
	return true
}

// Reference reports whether s can be a merchant's reference: 1 to
// MaxReferenceLen letters, digits, _ or -.
func Reference(s string) bool {
	if s == "" || len(s) > MaxReferenceLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// State reports whether s can be a provider's state: 1 to MaxStateLen
// letters, digits, _ or . (TRADE_SUCCESS, TRANSACTION.SUCCESS).
func State(s string) bool {
	if s == "" || len(s) > MaxStateLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}
