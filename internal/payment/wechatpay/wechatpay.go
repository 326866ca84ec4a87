// Package wechatpay verifies WeChat Pay API v3 payment notifications (支付
// 通知): a JSON body signed by WeChat Pay's platform key — RSA-SHA256,
// PKCS #1 v1.5, over "timestamp\nnonce\nbody\n", in the headers
// Wechatpay-Timestamp, Wechatpay-Nonce, Wechatpay-Signature (base64) and
// Wechatpay-Serial (which platform key) — whose resource holds the payment
// encrypted with AEAD_AES_256_GCM under the merchant's API v3 key.
//
// A notification is accepted within 5 minutes of its timestamp, signed with
// a configured platform key (several during a rotation, each named by its
// serial: a platform certificate's serial or a WeChat Pay public key's id),
// and for the configured merchant (mchid). An event TRANSACTION.SUCCESS
// whose trade_state is SUCCESS is a payment of amount.total, in the
// smallest unit of amount.currency (fen for CNY); every other event or
// state is verified and acknowledged, and is not one. Only a direct
// merchant's notifications are read (mchid; a service provider's sp_mchid
// and sub_mchid are not).
//
// Only the standard library's crypto is used.
package wechatpay

import (
	"crypto"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/seckill/seckill/internal/payment/notify"
)

// The headers of a notification.
const (
	HeaderTimestamp = "Wechatpay-Timestamp"
	HeaderNonce     = "Wechatpay-Nonce"
	HeaderSignature = "Wechatpay-Signature"
	HeaderSerial    = "Wechatpay-Serial"
)

// Tolerance is how far a notification's timestamp may be from now.
const Tolerance = 5 * time.Minute

// What is a payment.
const (
	EventTransactionSuccess = "TRANSACTION.SUCCESS"
	StateSuccess            = "SUCCESS"
	Algorithm               = "AEAD_AES_256_GCM"
)

// KeyLen is the length of an API v3 key: 32 bytes.
const KeyLen = 32

// maxNonceLen and maxSerialLen bound the headers; WeChat Pay's are 32 and
// about 40 characters.
const (
	maxNonceLen  = 64
	maxSerialLen = 64
)

// Options configure a Verifier.
type Options struct {
	// MchID is the merchant's id: a notification for another is refused.
	MchID string
	// APIv3Key is the merchant's API v3 key, KeyLen bytes.
	APIv3Key []byte
	// PlatformKeys are WeChat Pay's keys by serial (Wechatpay-Serial),
	// compared without regard to case.
	PlatformKeys map[string]*rsa.PublicKey
	// Now is the clock timestamps are checked against; nil is time.Now.
	Now func() time.Time
}

// Verifier verifies one merchant's notifications.
type Verifier struct {
	mchID string
	aead  cipher.AEAD
	keys  map[string]*rsa.PublicKey
	now   func() time.Time
}

// NewVerifier returns the Verifier of o.
func NewVerifier(o Options) (*Verifier, error) {
	if o.MchID == "" || len(o.PlatformKeys) == 0 {
		return nil, errors.New("wechatpay: a merchant id and at least one platform key are needed")
	}
	if len(o.APIv3Key) != KeyLen {
		return nil, fmt.Errorf("wechatpay: the API v3 key must be %d bytes", KeyLen)
	}
	block, err := aes.NewCipher(o.APIv3Key)
	if err != nil {
		return nil, fmt.Errorf("wechatpay: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("wechatpay: %w", err)
	}
	v := &Verifier{mchID: o.MchID, aead: aead, keys: map[string]*rsa.PublicKey{}, now: o.Now}
	for serial, k := range o.PlatformKeys {
		v.keys[strings.ToUpper(serial)] = k
	}
	if v.now == nil {
		v.now = time.Now
	}
	return v, nil
}

// Verify returns the notification that body and its headers h are. Errors
// wrap notify.ErrSignature (a header missing, an unknown serial, a
// timestamp more than Tolerance from now, a signature that does not
// verify), notify.ErrMalformed (a body or resource that does not parse, a
// field missing), notify.ErrUndecryptable (a resource that does not open
// with the API v3 key) or notify.ErrMerchant (another mchid); none quotes a
// key, a signature or the plaintext.
func (v *Verifier) Verify(body []byte, h http.Header) (notify.Notification, error) {
	if err := v.verifySignature(body, h); err != nil {
		return notify.Notification{}, err
	}
	return v.open(body)
}

func (v *Verifier) verifySignature(body []byte, h http.Header) error {
	ts, nonce, sig, serial := h.Get(HeaderTimestamp), h.Get(HeaderNonce), h.Get(HeaderSignature), h.Get(HeaderSerial)
	for _, hv := range [][2]string{{HeaderTimestamp, ts}, {HeaderNonce, nonce}, {HeaderSignature, sig}, {HeaderSerial, serial}} {
		if hv[1] == "" {
			return fmt.Errorf("%w: %s is missing", notify.ErrSignature, hv[0])
		}
	}
	key, ok := v.keys[strings.ToUpper(serial)]
	if len(serial) > maxSerialLen || !ok {
		return fmt.Errorf("%w: %s names no key of payment.wechatpay.platform_public_key", notify.ErrSignature, HeaderSerial)
	}
	secs, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %s must be Unix seconds", notify.ErrSignature, HeaderTimestamp)
	}
	if d := v.now().Sub(time.Unix(secs, 0)); secs < 0 || secs > 1<<40 || d > Tolerance || d < -Tolerance {
		return fmt.Errorf("%w: %s is more than %s from now", notify.ErrSignature, HeaderTimestamp, Tolerance)
	}
	if len(nonce) > maxNonceLen || strings.ContainsAny(nonce, "\n") {
		return fmt.Errorf("%w: %s must be 1 to %d characters on one line", notify.ErrSignature, HeaderNonce, maxNonceLen)
	}
	raw, err := base64.StdEncoding.DecodeString(sig)
	if err != nil {
		return fmt.Errorf("%w: %s is not base64", notify.ErrSignature, HeaderSignature)
	}
	digest := sha256.Sum256(Message(ts, nonce, body))
	if rsa.VerifyPKCS1v15(key, crypto.SHA256, digest[:], raw) != nil {
		return fmt.Errorf("%w: %s does not verify with the platform key its serial names", notify.ErrSignature, HeaderSignature)
	}
	return nil
}

// Message is what WeChat Pay signs of a notification: its timestamp, its
// nonce and its body, each followed by a line feed.
func Message(timestamp, nonce string, body []byte) []byte {
	m := make([]byte, 0, len(timestamp)+len(nonce)+len(body)+3)
	m = append(append(m, timestamp...), '\n')
	m = append(append(m, nonce...), '\n')
	m = append(append(m, body...), '\n')
	return m
}

// envelope is a notification's body.
type envelope struct {
	ID        string `json:"id"`
	EventType string `json:"event_type"`
	Resource  *struct {
		Algorithm      string `json:"algorithm"`
		Ciphertext     string `json:"ciphertext"`
		AssociatedData string `json:"associated_data"`
		Nonce          string `json:"nonce"`
	} `json:"resource"`
}

// transaction is the resource of a payment, decrypted.
type transaction struct {
	MchID         *string `json:"mchid"`
	OutTradeNo    string  `json:"out_trade_no"`
	TransactionID string  `json:"transaction_id"`
	TradeState    string  `json:"trade_state"`
	Amount        *struct {
		Total    *int64 `json:"total"`
		Currency string `json:"currency"`
	} `json:"amount"`
}

// open reads a verified body: the envelope, then, for a transaction, its
// resource decrypted.
func (v *Verifier) open(body []byte) (notify.Notification, error) {
	var e envelope
	if err := json.Unmarshal(body, &e); err != nil {
		return notify.Notification{}, fmt.Errorf("%w: the body must be a JSON object with id, event_type and resource", notify.ErrMalformed)
	}
	switch {
	case !notify.Token(e.ID, notify.MaxIDLen):
		return notify.Notification{}, fmt.Errorf("%w: id must be 1 to %d letters, digits or - _ . : @", notify.ErrMalformed, notify.MaxIDLen)
	case !notify.State(e.EventType):
		return notify.Notification{}, fmt.Errorf("%w: event_type must be an event such as %s", notify.ErrMalformed, EventTransactionSuccess)
	case e.EventType != EventTransactionSuccess:
		return notify.Notification{ID: e.ID, State: e.EventType}, nil
	}
	r := e.Resource
	switch {
	case r == nil:
		return notify.Notification{}, fmt.Errorf("%w: resource is missing", notify.ErrMalformed)
	case r.Algorithm != Algorithm:
		return notify.Notification{}, fmt.Errorf("%w: resource.algorithm must be %s", notify.ErrMalformed, Algorithm)
	case len(r.Nonce) != v.aead.NonceSize():
		return notify.Notification{}, fmt.Errorf("%w: resource.nonce must be %d characters", notify.ErrMalformed, v.aead.NonceSize())
	}
	ct, err := base64.StdEncoding.DecodeString(r.Ciphertext)
	if err != nil || len(ct) < v.aead.Overhead() {
		return notify.Notification{}, fmt.Errorf("%w: resource.ciphertext must be base64 of AES-GCM ciphertext and tag", notify.ErrMalformed)
	}
	plain, err := v.aead.Open(nil, []byte(r.Nonce), ct, []byte(r.AssociatedData))
	if err != nil {
		return notify.Notification{}, fmt.Errorf("%w: resource does not open with payment.wechatpay.api_v3_key", notify.ErrUndecryptable)
	}
	return v.decode(e.ID, plain)
}

// decode reads a decrypted transaction.
func (v *Verifier) decode(id string, plain []byte) (notify.Notification, error) {
	var tx transaction
	if err := json.Unmarshal(plain, &tx); err != nil {
		return notify.Notification{}, fmt.Errorf("%w: the resource must decrypt to a JSON transaction", notify.ErrMalformed)
	}
	if tx.MchID == nil {
		return notify.Notification{}, fmt.Errorf("%w: the transaction has no mchid", notify.ErrMalformed)
	}
	if *tx.MchID != v.mchID {
		if notify.Token(*tx.MchID, 32) {
			return notify.Notification{}, fmt.Errorf("%w: mchid %s is not payment.wechatpay.mch_id", notify.ErrMerchant, *tx.MchID)
		}
		return notify.Notification{}, fmt.Errorf("%w: mchid is not payment.wechatpay.mch_id", notify.ErrMerchant)
	}
	n := notify.Notification{ID: id, PaymentID: tx.TransactionID, Reference: tx.OutTradeNo, State: tx.TradeState}
	switch {
	case !notify.Token(n.PaymentID, notify.MaxIDLen):
		return notify.Notification{}, fmt.Errorf("%w: transaction_id must be 1 to %d letters, digits or - _ . : @", notify.ErrMalformed, notify.MaxIDLen)
	case !notify.Reference(n.Reference):
		return notify.Notification{}, fmt.Errorf("%w: out_trade_no must be 1 to %d letters, digits, _ or -", notify.ErrMalformed, notify.MaxReferenceLen)
	case !notify.State(n.State):
		return notify.Notification{}, fmt.Errorf("%w: trade_state must be a state such as %s", notify.ErrMalformed, StateSuccess)
	case tx.Amount == nil || tx.Amount.Total == nil || *tx.Amount.Total < 0:
		return notify.Notification{}, fmt.Errorf("%w: amount.total must be the amount in the smallest unit, not negative", notify.ErrMalformed)
	case !currency(tx.Amount.Currency):
		return notify.Notification{}, fmt.Errorf("%w: amount.currency must be an ISO 4217 code such as CNY", notify.ErrMalformed)
	}
	n.AmountCents, n.Currency = *tx.Amount.Total, tx.Amount.Currency
	n.Paid = n.State == StateSuccess
	return n, nil
}

func currency(s string) bool {
	return len(s) == 3 && strings.Trim(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") == ""
}
