package config

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"os"
	"strconv"
	"strings"
)

// Alipay configures payment.mode alipay: Alipay's notifications on POST
// /webhooks/alipay.
type Alipay struct {
	// AppID is the app the notifications must name (app_id).
	AppID string `mapstructure:"app_id"`
	// PublicKey is Alipay's public key (支付宝公钥) the notifications are
	// signed with, or several, comma-separated, during a rotation: each as
	// PEM, as the base64 Alipay's console shows, or the path of a file
	// holding either.
	PublicKey string `mapstructure:"public_key"`
}

// WeChatPay configures payment.mode wechatpay: WeChat Pay's API v3
// notifications on POST /webhooks/wechatpay.
type WeChatPay struct {
	// MchID is the merchant the notifications must name (mchid).
	MchID string `mapstructure:"mch_id"`
	// APIv3Key is the merchant's API v3 key, 32 characters, which the
	// notifications' payments are encrypted with.
	APIv3Key string `mapstructure:"api_v3_key"`
	// PlatformPublicKey is WeChat Pay's keys the notifications are signed
	// with: serial=key entries, comma-separated, the serial as
	// Wechatpay-Serial names it (a platform certificate's serial, or a
	// WeChat Pay public key's id) and the key a platform certificate or a
	// public key as PEM, as base64, or the path of a file holding either.
	PlatformPublicKey string `mapstructure:"platform_public_key"`
}

// set reports whether any Alipay setting is.
func (a Alipay) set() bool { return a.AppID != "" || a.PublicKey != "" }

// set reports whether any WeChat Pay setting is.
func (w WeChatPay) set() bool { return w.MchID != "" || w.APIv3Key != "" || w.PlatformPublicKey != "" }

// PublicKeys returns Alipay's public keys; a key that does not parse is an
// *Error naming payment.alipay.public_key, never quoting it.
func (a Alipay) PublicKeys() ([]*rsa.PublicKey, error) {
	const key = "payment.alipay.public_key"
	entries := splitList(a.PublicKey)
	if len(entries) == 0 {
		return nil, &Error{Key: key, Allowed: "payment.mode alipay needs Alipay's public key (支付宝公钥)"}
	}
	var out []*rsa.PublicKey
	for i, e := range entries {
		k, err := rsaPublicKey(e)
		if err != nil {
			return nil, &Error{Key: key, Allowed: keyProblem(i, len(entries), err) +
				": each key is PEM, the base64 Alipay's console shows, or the path of a file holding either; comma-separated for more than one"}
		}
		out = append(out, k)
	}
	return out, nil
}

// PlatformKeys returns WeChat Pay's platform keys by serial; an entry that
// does not parse is an *Error naming payment.wechatpay.platform_public_key,
// never quoting the key.
func (w WeChatPay) PlatformKeys() (map[string]*rsa.PublicKey, error) {
	const key = "payment.wechatpay.platform_public_key"
	const form = "serial=key entries, comma-separated: the serial as Wechatpay-Serial names it, the key a platform certificate or public key as PEM, base64, or the path of a file holding either"
	entries := splitList(w.PlatformPublicKey)
	if len(entries) == 0 {
		return nil, &Error{Key: key, Allowed: "payment.mode wechatpay needs at least one key: " + form}
	}
	out := map[string]*rsa.PublicKey{}
	for i, e := range entries {
		serial, val, ok := strings.Cut(e, "=")
		serial = strings.TrimSpace(serial)
		if !ok || !serialName(serial) {
			return nil, &Error{Key: key, Allowed: entryProblem("entry", i, len(entries), errors.New("does not start with a serial of 1 to 64 letters, digits or _, then =")) + ": " + form}
		}
		if _, dup := out[strings.ToUpper(serial)]; dup {
			return nil, &Error{Key: key, Value: serial, Allowed: "each serial once: " + form}
		}
		k, err := rsaPublicKey(strings.TrimSpace(val))
		if err != nil {
			return nil, &Error{Key: key, Allowed: keyProblem(i, len(entries), err) + " (serial " + serial + "): " + form}
		}
		out[strings.ToUpper(serial)] = k
	}
	return out, nil
}

// keyProblem says which key of n is wrong, and how.
func keyProblem(i, n int, err error) string { return entryProblem("key", i, n, err) }

// entryProblem says which noun (key, entry) of n is wrong, and how.
func entryProblem(noun string, i, n int, err error) string {
	if n == 1 {
		return "the " + noun + " " + err.Error()
	}
	return noun + " " + strconv.Itoa(i+1) + " of " + strconv.Itoa(n) + " " + err.Error()
}

func serialName(s string) bool {
	return s != "" && len(s) <= 64 && strings.Trim(s, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_") == ""
}

// minRSABits is the size the providers' RSA2 keys have; a smaller one is a
// mistake.
const minRSABits = 2048

// rsaPublicKey parses an RSA public key given as PEM (PUBLIC KEY, RSA
// PUBLIC KEY or CERTIFICATE; a literal \n stands for a line break, as an
// environment variable may carry it), as the base64 of its DER (PKIX or a
// certificate), or as the path of a file holding either. Its errors say
// what is wrong and never quote the value.
func rsaPublicKey(s string) (*rsa.PublicKey, error) {
	if k, ok, err := parseKeyText(s); ok {
		return k, err
	}
	data, err := os.ReadFile(s)
	if err != nil {
		return nil, errors.New("is not PEM, not base64 of a key, and names no file that can be read")
	}
	if len(data) > maxPEMBytes {
		return nil, errors.New("is in a file larger than 1 MiB")
	}
	if k, ok, err := parseKeyText(strings.TrimSpace(string(data))); ok {
		return k, err
	}
	return nil, errors.New("is in a file that holds neither PEM nor base64 of a key")
}

// parseKeyText parses PEM or base64; ok is false when s is neither.
func parseKeyText(s string) (*rsa.PublicKey, bool, error) {
	if strings.HasPrefix(s, "-----BEGIN") {
		if !strings.Contains(s, "\n") {
			s = strings.ReplaceAll(s, `\n`, "\n")
		}
		b, _ := pem.Decode([]byte(s))
		if b == nil {
			return nil, true, errors.New("is PEM that does not decode")
		}
		k, err := rsaFromDER(b.Type, b.Bytes)
		return k, true, err
	}
	der, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil || len(der) < 64 {
		return nil, false, nil
	}
	for _, typ := range []string{"PUBLIC KEY", "CERTIFICATE"} {
		if pub, err := parseDER(typ, der); err == nil {
			k, err := rsaKey(pub)
			return k, true, err
		}
	}
	return nil, false, nil
}

// rsaFromDER parses a PEM block's DER as typ says and checks the key.
func rsaFromDER(typ string, der []byte) (*rsa.PublicKey, error) {
	pub, err := parseDER(typ, der)
	if err != nil {
		return nil, err
	}
	return rsaKey(pub)
}

func parseDER(typ string, der []byte) (any, error) {
	var pub any
	var err error
	switch typ {
	case "PUBLIC KEY":
		pub, err = x509.ParsePKIXPublicKey(der)
	case "RSA PUBLIC KEY":
		pub, err = x509.ParsePKCS1PublicKey(der)
	case "CERTIFICATE":
		var c *x509.Certificate
		if c, err = x509.ParseCertificate(der); err == nil {
			pub = c.PublicKey
		}
	default:
		return nil, errors.New("is PEM of " + pemType(typ) + ", not PUBLIC KEY, RSA PUBLIC KEY or CERTIFICATE")
	}
	if err != nil {
		return nil, errors.New("does not parse as " + typ)
	}
	return pub, nil
}

// rsaKey is pub if it is an RSA key of at least minRSABits.
func rsaKey(pub any) (*rsa.PublicKey, error) {
	k, ok := pub.(*rsa.PublicKey)
	switch {
	case !ok:
		return nil, errors.New("is not an RSA key")
	case k.N.BitLen() < minRSABits:
		return nil, errors.New("is an RSA key of fewer than 2048 bits")
	}
	return k, nil
}

// pemType is a PEM block's type as an error may show it: a private key's
// type says what was pasted, which helps, and nothing of the key.
func pemType(typ string) string {
	if len(typ) > 40 || strings.Trim(typ, "ABCDEFGHIJKLMNOPQRSTUVWXYZ ") != "" {
		return "another type"
	}
	return typ
}

// validateCN checks the settings of the alipay and wechatpay modes: the
// mode's are complete and parse, and no other mode's is set. No key or
// secret appears in an error.
func (p Payment) validateCN() error {
	if p.Mode != PaymentAlipay && p.Alipay.set() {
		return &Error{Key: "payment.mode", Value: p.Mode, Allowed: "must be alipay when a payment.alipay setting is set"}
	}
	if p.Mode != PaymentWeChatPay && p.WeChatPay.set() {
		return &Error{Key: "payment.mode", Value: p.Mode, Allowed: "must be wechatpay when a payment.wechatpay setting is set"}
	}
	switch p.Mode {
	case PaymentAlipay:
		if !digits(p.Alipay.AppID) {
			return &Error{Key: "payment.alipay.app_id", Value: p.Alipay.AppID, Allowed: "payment.mode alipay needs the app's id: 1 to 32 digits, e.g. 2021000123456789"}
		}
		if p.Currency != "CNY" {
			return &Error{Key: "payment.currency", Value: p.Currency, Allowed: "must be CNY in payment.mode alipay: Alipay's amounts are in yuan"}
		}
		_, err := p.Alipay.PublicKeys()
		return err
	case PaymentWeChatPay:
		if !digits(p.WeChatPay.MchID) {
			return &Error{Key: "payment.wechatpay.mch_id", Value: p.WeChatPay.MchID, Allowed: "payment.mode wechatpay needs the merchant's id (商户号): 1 to 32 digits, e.g. 1230000109"}
		}
		if len(p.WeChatPay.APIv3Key) != 32 {
			return &Error{Key: "payment.wechatpay.api_v3_key", Allowed: "payment.mode wechatpay needs the merchant's API v3 key: the 32 characters set in the merchant platform"}
		}
		_, err := p.WeChatPay.PlatformKeys()
		return err
	}
	return nil
}

func digits(s string) bool {
	return s != "" && len(s) <= 32 && strings.Trim(s, "0123456789") == ""
}
