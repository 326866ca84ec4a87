package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	stripeSK = "sk_test_hunter2hunter2SecretKey0123"
	stripeWH = "whsec_hunter2hunter2Signing0123"
	stripeW2 = "whsec_hunter2RolledSigning456789"
)

func TestStripeSettings(t *testing.T) {
	c, err := Load("", env(map[string]string{
		"SECKILL_REDIS_ADDRS":                   "127.0.0.1:6379",
		"SECKILL_PAYMENT_MODE":                  "stripe",
		"SECKILL_PAYMENT_STRIPE_SECRET_KEY":     stripeSK,
		"SECKILL_PAYMENT_STRIPE_WEBHOOK_SECRET": " " + stripeWH + " , " + stripeW2 + ",",
		"SECKILL_PAYMENT_STRIPE_API_BASE":       "http://127.0.0.1:12111",
	}))
	require.NoError(t, err)
	mode, err := c.PaymentConfirmation()
	require.NoError(t, err)
	assert.Equal(t, PaymentStripe, mode)
	assert.Equal(t, stripeSK, c.Payment.Stripe.SecretKey)
	assert.Equal(t, []string{stripeWH, stripeW2}, c.Payment.Stripe.WebhookSecrets())
	assert.Equal(t, "http://127.0.0.1:12111", c.Payment.Stripe.APIBase)
	for _, k := range []string{"rk_live_abcdefgh0123", "sk_live_ABCDEFGH"} {
		_, err := Load("", env(map[string]string{"SECKILL_PAYMENT_MODE": "stripe",
			"SECKILL_PAYMENT_STRIPE_SECRET_KEY": k, "SECKILL_PAYMENT_STRIPE_WEBHOOK_SECRET": stripeWH,
			"SECKILL_PAYMENT_STRIPE_API_BASE": "https://stripe.internal:8443/"}))
		assert.NoError(t, err, k)
	}
	assert.Empty(t, UnknownEnv([]string{"SECKILL_PAYMENT_STRIPE_SECRET_KEY=x", "SECKILL_PAYMENT_STRIPE_WEBHOOK_SECRET=x", "SECKILL_PAYMENT_STRIPE_API_BASE=x"}))
}

// Each bad Stripe setting is an *Error naming its key and variable, and
// never shows a secret, valid or not.
func TestBadStripeSettingsNameTheKey(t *testing.T) {
	stripe := func(kv ...string) map[string]string {
		m := map[string]string{"SECKILL_PAYMENT_MODE": "stripe",
			"SECKILL_PAYMENT_STRIPE_SECRET_KEY": stripeSK, "SECKILL_PAYMENT_STRIPE_WEBHOOK_SECRET": stripeWH}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		env map[string]string
		key string
	}{
		{stripe("SECKILL_PAYMENT_STRIPE_SECRET_KEY", ""), "payment.stripe.secret_key"},
		{stripe("SECKILL_PAYMENT_STRIPE_SECRET_KEY", "pk_test_hunter2hunter2"), "payment.stripe.secret_key"},
		{stripe("SECKILL_PAYMENT_STRIPE_SECRET_KEY", "sk_test_hunter2!hunter2"), "payment.stripe.secret_key"},
		{stripe("SECKILL_PAYMENT_STRIPE_SECRET_KEY", "sk_test_hunt"), "payment.stripe.secret_key"},
		{stripe("SECKILL_PAYMENT_STRIPE_SECRET_KEY", "hunter2hunter2hunter2"), "payment.stripe.secret_key"},
		{stripe("SECKILL_PAYMENT_STRIPE_WEBHOOK_SECRET", ""), "payment.stripe.webhook_secret"},
		{stripe("SECKILL_PAYMENT_STRIPE_WEBHOOK_SECRET", " , "), "payment.stripe.webhook_secret"},
		{stripe("SECKILL_PAYMENT_STRIPE_WEBHOOK_SECRET", "hunter2hunter2hunter2"), "payment.stripe.webhook_secret"},
		{stripe("SECKILL_PAYMENT_STRIPE_WEBHOOK_SECRET", stripeWH+",whsec_hunter2 hunter2"), "payment.stripe.webhook_secret"},
		{stripe("SECKILL_PAYMENT_STRIPE_API_BASE", "http://api.stripe.example"), "payment.stripe.api_base"},
		{stripe("SECKILL_PAYMENT_STRIPE_API_BASE", "ftp://127.0.0.1"), "payment.stripe.api_base"},
		{stripe("SECKILL_PAYMENT_STRIPE_API_BASE", "https://user:hunter2@stripe.example"), "payment.stripe.api_base"},
		{stripe("SECKILL_PAYMENT_STRIPE_API_BASE", "https://stripe.example/v1"), "payment.stripe.api_base"},
		{stripe("SECKILL_PAYMENT_STRIPE_API_BASE", "127.0.0.1:12111"), "payment.stripe.api_base"},
		// Stripe keys in another mode are a mistake.
		{map[string]string{"SECKILL_PAYMENT_MODE": "trusted", "SECKILL_PAYMENT_STRIPE_SECRET_KEY": stripeSK}, "payment.mode"},
		{map[string]string{"SECKILL_PAYMENT_STRIPE_WEBHOOK_SECRET": stripeWH}, "payment.mode"},
		{map[string]string{"SECKILL_PAYMENT_MODE": "webhook", "SECKILL_PAYMENT_WEBHOOK_SECRET": whsec(32, 1),
			"SECKILL_PAYMENT_STRIPE_SECRET_KEY": stripeSK}, "payment.mode"},
		// The Standard Webhooks key is webhook mode's, not Stripe's.
		{stripe("SECKILL_PAYMENT_WEBHOOK_SECRET", whsec(32, 1)), "payment.mode"},
		{map[string]string{"SECKILL_PAYMENT_MODE": "Stripe"}, "payment.mode"},
	} {
		_, err := Load("", env(tc.env))
		var ce *Error
		require.ErrorAs(t, err, &ce, "%v", tc.env)
		assert.Equal(t, tc.key, ce.Key, "%v: %v", tc.env, err)
		assert.Contains(t, err.Error(), tc.key+" ("+envName(tc.key)+")")
		assert.NotContains(t, err.Error(), "hunter2", "an error shows a secret")
		assert.False(t, strings.Contains(err.Error(), "SecretKey0123") || strings.Contains(err.Error(), "Signing0123"), "an error shows a secret: %v", err)
	}
}
