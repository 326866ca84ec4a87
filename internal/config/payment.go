package config

import (
	"encoding/base64"
	"strings"
)

// Payment confirmation modes (payment.mode).
const (
	// PaymentWebhook: only a payment notification signed by the payment
	// side (POST /webhooks/payments) marks an order paid.
	PaymentWebhook = "webhook"
	// PaymentTrusted: the shopper's pay marks the order paid; for a gateway
	// that forwards it only after charging.
	PaymentTrusted = "trusted"
	// PaymentStripe: seckill opens a Stripe PaymentIntent per order and
	// Stripe's signed event (POST /webhooks/stripe) marks the order paid
	// (payment.stripe).
	PaymentStripe = "stripe"
	// PaymentAlipay: Alipay's signed notification (POST /webhooks/alipay)
	// marks an order paid.
	PaymentAlipay = "alipay"
	// PaymentWeChatPay: WeChat Pay's signed, encrypted notification (POST
	// /webhooks/wechatpay) marks an order paid.
	PaymentWeChatPay = "wechatpay"
)

// PaymentModes are the values of payment.mode.
var PaymentModes = []string{PaymentWebhook, PaymentTrusted, PaymentStripe, PaymentAlipay, PaymentWeChatPay}

// Payment configures how an order comes to be paid.
type Payment struct {
	Mode     string `mapstructure:"mode"`
	Currency string `mapstructure:"currency"`
	// WebhookSecret is one or more whsec_<base64> keys, comma-separated: a
	// notification signed with any of them is accepted.
	WebhookSecret string `mapstructure:"webhook_secret"`
	// Stripe is payment.stripe, for payment.mode stripe.
	Stripe Stripe `mapstructure:"stripe"`
	// Alipay is payment.alipay, for payment.mode alipay.
	Alipay Alipay `mapstructure:"alipay"`
	// WeChatPay is payment.wechatpay, for payment.mode wechatpay.
	WeChatPay WeChatPay `mapstructure:"wechatpay"`
}

// Secrets returns the webhook keys, one per comma-separated entry.
func (p Payment) Secrets() []string { return splitList(p.WebhookSecret) }

// PaymentConfirmation is the mode orders are paid by: payment.mode, or
// trusted when it is unset and the backends are embedded. With a real
// Redis or MySQL and no payment.mode it is an *Error: a shop must choose
// who confirms a payment. Only commands that serve shoppers ask.
func (c *Config) PaymentConfirmation() (string, error) {
	if c.Payment.Mode != "" {
		return c.Payment.Mode, nil
	}
	if c.External() {
		return "", &Error{Key: "payment.mode", Allowed: "must be set when Redis or MySQL is configured: " +
			"webhook (only a payment notification signed with payment.webhook_secret marks an order paid), " +
			"stripe, alipay or wechatpay (the provider's signed notification does), or " +
			"trusted (the shopper's pay marks it paid: for a gateway that forwards it only after charging)"}
	}
	return PaymentTrusted, nil
}

// validate checks the currency and each mode's settings: a mode needs its
// keys, and a key configured for another mode is a mistake to report. The
// keys' values never appear in an error.
func (p Payment) validate() error {
	if len(p.Currency) != 3 || strings.ToUpper(p.Currency) != p.Currency || strings.Trim(p.Currency, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
		return &Error{Key: "payment.currency", Value: p.Currency, Allowed: "an ISO 4217 code: three capital letters (USD, EUR, CNY)"}
	}
	if err := p.validateWebhook(); err != nil {
		return err
	}
	if err := p.validateCN(); err != nil {
		return err
	}
	return p.Stripe.validate(p.Mode)
}

// validateWebhook checks payment.webhook_secret: webhook mode needs at
// least one key, and another mode none.
func (p Payment) validateWebhook() error {
	secrets := p.Secrets()
	if p.Mode != PaymentWebhook {
		if len(secrets) > 0 {
			return &Error{Key: "payment.mode", Value: p.Mode, Allowed: "must be webhook when payment.webhook_secret is set"}
		}
		return nil
	}
	if len(secrets) == 0 {
		return &Error{Key: "payment.webhook_secret", Allowed: "payment.mode webhook needs at least one whsec_<base64> key"}
	}
	return webhookKeys("payment.webhook_secret", secrets)
}

// webhookKeys checks Standard Webhooks keys configured under key; their
// values never appear in an error.
func webhookKeys(key string, secrets []string) error {
	for _, s := range secrets {
		k, ok := strings.CutPrefix(s, "whsec_")
		raw, err := base64.StdEncoding.DecodeString(k)
		if !ok || err != nil || len(raw) < 24 || len(raw) > 64 {
			return &Error{Key: key, Allowed: "whsec_ followed by the base64 of a 24- to 64-byte key, comma-separated for more than one"}
		}
	}
	return nil
}

// splitList returns the comma-separated entries of s, trimmed.
func splitList(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}
