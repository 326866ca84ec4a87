// Package paytest builds payment providers' notifications for tests, as
// each provider's documentation describes them — field order, encoding,
// line breaks — signed and encrypted with keys the test makes, so that a
// notification the code accepts here is one a provider's would be.
package paytest

import (
	"crypto"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Keys are two 2048-bit RSA keys, made once per test binary (a key takes a
// while to make): a provider's current key and one being rotated out.
var Keys = sync.OnceValue(func() [2]*rsa.PrivateKey {
	var ks [2]*rsa.PrivateKey
	for i := range ks {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		ks[i] = k
	}
	return ks
})

// AlipayParams are the parameters of an asynchronous notification of a
// paid trade (TRADE_SUCCESS), with every field of Alipay's documented
// example (alipay.trade.page.pay, 异步通知) — values with spaces, & = + and
// non-ASCII characters among them — for app appID, trade tradeNo of
// reference, total yuan.
func AlipayParams(appID, notifyID, tradeNo, reference, yuan string) map[string]string {
	return map[string]string{
		"gmt_create":       "2026-11-27 15:45:57",
		"charset":          "utf-8",
		"seller_email":     "shop@example.com",
		"subject":          "秒杀 Flash sale & more = fun+",
		"buyer_id":         "2088102122524333",
		"invoice_amount":   yuan,
		"notify_id":        notifyID,
		"fund_bill_list":   `[{"amount":"` + yuan + `","fundChannel":"ALIPAYACCOUNT"}]`,
		"notify_type":      "trade_status_sync",
		"trade_status":     "TRADE_SUCCESS",
		"receipt_amount":   yuan,
		"app_id":           appID,
		"buyer_pay_amount": yuan,
		"seller_id":        "2088102119685838",
		"gmt_payment":      "2026-11-27 15:45:58",
		"notify_time":      "2026-11-27 15:45:58",
		"version":          "1.0",
		"out_trade_no":     reference,
		"total_amount":     yuan,
		"trade_no":         tradeNo,
		"auth_app_id":      appID,
		"buyer_logon_id":   "abc***@example.com",
		"point_amount":     "0.00",
		"passback_params":  "",
	}
}

// AlipayBody is the body Alipay POSTs for params: sign_type RSA2, and sign
// the base64 of SHA256withRSA, with key, over the content to sign that the
// documentation describes — every parameter but sign and sign_type whose
// value is not empty, sorted by name, name=value joined with & — and the
// whole form URL encoded as Java's URLEncoder does (a space is +).
func AlipayBody(t testing.TB, params map[string]string, key *rsa.PrivateKey) []byte {
	t.Helper()
	var names []string
	for k, v := range params {
		if k != "sign" && k != "sign_type" && v != "" {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	pairs := make([]string, 0, len(names))
	for _, k := range names {
		pairs = append(pairs, k+"="+params[k])
	}
	form := url.Values{}
	for k, v := range params {
		form.Set(k, v)
	}
	form.Set("sign_type", "RSA2")
	form.Set("sign", sign(t, key, []byte(strings.Join(pairs, "&"))))
	return []byte(form.Encode())
}

func sign(t testing.TB, key *rsa.PrivateKey, msg []byte) string {
	t.Helper()
	digest := sha256.Sum256(msg)
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(sig)
}

// WeChatPayTransaction is the plaintext of a payment notification's
// resource, with the fields of WeChat Pay's documented example (JSAPI 支付
// 通知), for merchant mchID.
func WeChatPayTransaction(mchID, transactionID, reference string, total int64, currency string) map[string]any {
	return map[string]any{
		"transaction_id":   transactionID,
		"amount":           map[string]any{"payer_total": total, "total": total, "currency": currency, "payer_currency": currency},
		"mchid":            mchID,
		"trade_state":      "SUCCESS",
		"bank_type":        "CMC",
		"promotion_detail": []any{},
		"success_time":     "2026-11-27T20:00:01+08:00",
		"payer":            map[string]any{"openid": "oUpF8uMuAJO_M2pxb1Q9zNjWeS6o"},
		"out_trade_no":     reference,
		"appid":            "wxd678efh567hg6787",
		"trade_state_desc": "支付成功",
		"trade_type":       "JSAPI",
		"attach":           "自定义数据",
		"scene_info":       map[string]any{"device_id": "013467007045764"},
	}
}

// WeChatPay is a notification as WeChat Pay sends it.
type WeChatPay struct {
	ID        string         // the notification's id; zero: EV-2018022511223320873
	Event     string         // zero: TRANSACTION.SUCCESS
	Plain     map[string]any // the resource's plaintext
	APIv3Key  string         // the key the resource is encrypted with
	Signer    *rsa.PrivateKey
	Serial    string
	At        time.Time // the timestamp; zero: now
	Nonce     string    // the header's; zero: a fresh one
	Indent    bool      // pretty-printed, line breaks in the body
	Algorithm string    // zero: AEAD_AES_256_GCM
}

// Build returns m's body and headers: the documented envelope with the
// resource sealed (Seal), then Wechatpay-Signature, the base64 of
// SHA256withRSA over "timestamp\nnonce\nbody\n".
func (m WeChatPay) Build(t testing.TB) ([]byte, http.Header) {
	t.Helper()
	if m.ID == "" {
		m.ID = "EV-2018022511223320873"
	}
	if m.Event == "" {
		m.Event = "TRANSACTION.SUCCESS"
	}
	if m.At.IsZero() {
		m.At = time.Now()
	}
	if m.Nonce == "" {
		m.Nonce = NonceString(t, 32)
	}
	plain, err := json.Marshal(m.Plain)
	if err != nil {
		t.Fatal(err)
	}
	res := Seal(t, m.APIv3Key, plain)
	if m.Algorithm != "" {
		res["algorithm"] = m.Algorithm
	}
	env := map[string]any{"id": m.ID, "create_time": "2026-11-27T20:00:02+08:00",
		"resource_type": "encrypt-resource", "event_type": m.Event, "summary": "支付成功", "resource": res}
	var body []byte
	if m.Indent {
		body, err = json.MarshalIndent(env, "", "    ")
	} else {
		body, err = json.Marshal(env)
	}
	if err != nil {
		t.Fatal(err)
	}
	return body, WeChatPayHeaders(t, m.Signer, m.Serial, m.At, m.Nonce, body)
}

// WeChatPayHeaders are the headers WeChat Pay signs body with, with key
// named serial, at.
func WeChatPayHeaders(t testing.TB, key *rsa.PrivateKey, serial string, at time.Time, nonce string, body []byte) http.Header {
	t.Helper()
	ts := strconv.FormatInt(at.Unix(), 10)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Wechatpay-Timestamp", ts)
	h.Set("Wechatpay-Nonce", nonce)
	h.Set("Wechatpay-Signature", sign(t, key, []byte(ts+"\n"+nonce+"\n"+string(body)+"\n")))
	h.Set("Wechatpay-Serial", serial)
	h.Set("Wechatpay-Signature-Type", "WECHATPAY2-SHA256-RSA2048")
	return h
}

// Seal encrypts plain as WeChat Pay does a resource: AES-256-GCM under the
// API v3 key, a 12-character nonce, associated_data "transaction", the
// ciphertext with its tag appended, in base64.
func Seal(t testing.TB, key string, plain []byte) map[string]any {
	t.Helper()
	block, err := aes.NewCipher([]byte(key))
	if err != nil {
		t.Fatal(err)
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	nonce, ad := NonceString(t, 12), "transaction"
	return map[string]any{"original_type": "transaction", "algorithm": "AEAD_AES_256_GCM", "associated_data": ad, "nonce": nonce,
		"ciphertext": base64.StdEncoding.EncodeToString(gcm.Seal(nil, []byte(nonce), plain, []byte(ad)))}
}

// NonceString is n random letters and digits, as WeChat Pay's nonces are.
func NonceString(t testing.TB, n int) string {
	t.Helper()
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}
