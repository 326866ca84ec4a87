package config

import (
	"net"
	"net/url"
	"strings"
)

// Stripe configures payment.mode stripe (payment.stripe).
type Stripe struct {
	// SecretKey is the API key seckill calls Stripe with: sk_live_…,
	// sk_test_…, or a restricted key rk_live_…/rk_test_… allowed to write
	// PaymentIntents and Refunds.
	SecretKey string `mapstructure:"secret_key"`
	// WebhookSecret is one or more whsec_… signing secrets of the webhook
	// endpoint, comma-separated: an event signed with any of them is
	// accepted (Stripe signs with two while a secret is rolled).
	WebhookSecret string `mapstructure:"webhook_secret"`
	// APIBase is the API's address: empty for Stripe's own; another for
	// tests (stripe-mock).
	APIBase string `mapstructure:"api_base"`
}

// WebhookSecrets returns the webhook signing secrets, one per
// comma-separated entry.
func (s Stripe) WebhookSecrets() []string { return splitList(s.WebhookSecret) }

// validate checks payment.stripe for payment.mode mode: stripe mode needs a
// secret key and at least one webhook secret, each well formed; another
// mode none of them. No secret's value appears in an error.
func (s Stripe) validate(mode string) error {
	if mode != PaymentStripe {
		for key, v := range map[string]string{"payment.stripe.secret_key": s.SecretKey, "payment.stripe.webhook_secret": s.WebhookSecret} {
			if strings.TrimSpace(v) != "" {
				return &Error{Key: "payment.mode", Value: mode, Allowed: "must be stripe when " + key + " is set"}
			}
		}
		return nil
	}
	if !stripeKey(s.SecretKey, "sk_live_", "sk_test_", "rk_live_", "rk_test_") {
		return &Error{Key: "payment.stripe.secret_key", Allowed: "payment.mode stripe needs Stripe's secret API key: sk_live_, sk_test_, rk_live_ or rk_test_ followed by letters and digits"}
	}
	secrets := s.WebhookSecrets()
	if len(secrets) == 0 {
		return &Error{Key: "payment.stripe.webhook_secret", Allowed: "payment.mode stripe needs the webhook endpoint's signing secret (whsec_…), comma-separated for more than one"}
	}
	for _, w := range secrets {
		if !stripeKey(w, "whsec_") {
			return &Error{Key: "payment.stripe.webhook_secret", Allowed: "whsec_ followed by letters and digits, comma-separated for more than one"}
		}
	}
	return stripeAPIBase(s.APIBase)
}

// stripeKey reports whether k is one of prefixes followed by 8 to 256
// letters and digits.
func stripeKey(k string, prefixes ...string) bool {
	for _, p := range prefixes {
		rest, ok := strings.CutPrefix(k, p)
		if !ok {
			continue
		}
		if len(rest) < 8 || len(rest) > 256 {
			return false
		}
		for i := 0; i < len(rest); i++ {
			c := rest[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
				return false
			}
		}
		return true
	}
	return false
}

// stripeAPIBase checks payment.stripe.api_base: empty (Stripe's API), an
// https URL, or an http one on a loopback address (stripe-mock), which
// never sends the secret key across a network in the clear.
func stripeAPIBase(base string) error {
	if base == "" {
		return nil
	}
	bad := &Error{Key: "payment.stripe.api_base", Value: base,
		Allowed: "empty for Stripe's API, an https:// URL, or http:// on a loopback address (stripe-mock), with no path, query or credentials"}
	if strings.Contains(base, "@") {
		bad.Value = "" // it may hold a password
	}
	u, err := url.Parse(base)
	if err != nil || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return bad
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		host := u.Hostname()
		if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
			return nil
		}
	}
	return bad
}
