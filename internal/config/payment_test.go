package config

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// whsec is a webhook key of n bytes, each b, as payment.webhook_secret takes it.
func whsec(n int, b byte) string {
	return "whsec_" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, n))
}

func TestPaymentDefaults(t *testing.T) {
	c, err := Load("", env(nil))
	require.NoError(t, err)
	assert.Equal(t, "USD", c.Payment.Currency)
	assert.Empty(t, c.Payment.Mode)
	assert.Empty(t, c.Payment.Secrets())
	mode, err := c.PaymentConfirmation()
	require.NoError(t, err)
	assert.Equal(t, PaymentTrusted, mode, "embedded: the shopper's pay marks the order paid")
	assert.Empty(t, UnknownEnv([]string{"SECKILL_PAYMENT_MODE=x", "SECKILL_PAYMENT_CURRENCY=x", "SECKILL_PAYMENT_WEBHOOK_SECRET=x"}))
}

// TestPaymentConfirmation: with a real Redis or MySQL and no payment.mode,
// PaymentConfirmation is an *Error naming payment.mode, as ShopperAuth is
// for auth.mode; otherwise it is the mode set, or trusted when embedded.
func TestPaymentConfirmation(t *testing.T) {
	const redis, dsn = "127.0.0.1:6379", "root@tcp(127.0.0.1:3306)/seckill"
	for _, tc := range []struct {
		env  map[string]string
		want string // "" = an error naming payment.mode
	}{
		{nil, PaymentTrusted},
		{map[string]string{"SECKILL_PAYMENT_MODE": "trusted"}, PaymentTrusted},
		{map[string]string{"SECKILL_PAYMENT_MODE": "webhook", "SECKILL_PAYMENT_WEBHOOK_SECRET": whsec(32, 1)}, PaymentWebhook},
		{map[string]string{"SECKILL_REDIS_ADDRS": redis}, ""},
		{map[string]string{"SECKILL_MYSQL_DSN": dsn}, ""},
		{map[string]string{"SECKILL_REDIS_ADDRS": redis, "SECKILL_MYSQL_DSN": dsn, "SECKILL_AUTH_MODE": "header"}, ""},
		{map[string]string{"SECKILL_REDIS_ADDRS": redis, "SECKILL_PAYMENT_MODE": "trusted"}, PaymentTrusted},
		{map[string]string{"SECKILL_MYSQL_DSN": dsn, "SECKILL_PAYMENT_MODE": "webhook",
			"SECKILL_PAYMENT_WEBHOOK_SECRET": whsec(24, 2)}, PaymentWebhook},
	} {
		c, err := Load("", env(tc.env))
		require.NoError(t, err, "%v", tc.env)
		mode, err := c.PaymentConfirmation()
		if tc.want == "" {
			var ce *Error
			require.ErrorAs(t, err, &ce, "%v", tc.env)
			assert.Equal(t, "payment.mode", ce.Key)
			assert.ErrorContains(t, err, "payment.mode (SECKILL_PAYMENT_MODE)")
			assert.ErrorContains(t, err, "webhook")
			assert.ErrorContains(t, err, "trusted")
			continue
		}
		require.NoError(t, err, "%v", tc.env)
		assert.Equal(t, tc.want, mode, "%v", tc.env)
	}
}

// TestBadPaymentValuesNameTheKey: each bad payment setting is an *Error
// naming its key and variable, and a webhook key, valid or not, never
// appears in the error.
func TestBadPaymentValuesNameTheKey(t *testing.T) {
	valid := whsec(32, 0xA5)
	for _, tc := range []struct {
		env map[string]string
		key string
	}{
		{map[string]string{"SECKILL_PAYMENT_MODE": "gateway"}, "payment.mode"},
		{map[string]string{"SECKILL_PAYMENT_MODE": "Webhook", "SECKILL_PAYMENT_WEBHOOK_SECRET": valid}, "payment.mode"},
		// webhook mode needs a key.
		{map[string]string{"SECKILL_PAYMENT_MODE": "webhook"}, "payment.webhook_secret"},
		{map[string]string{"SECKILL_PAYMENT_MODE": "webhook", "SECKILL_PAYMENT_WEBHOOK_SECRET": " , ,"}, "payment.webhook_secret"},
		// A key in another mode is a mistake.
		{map[string]string{"SECKILL_PAYMENT_MODE": "trusted", "SECKILL_PAYMENT_WEBHOOK_SECRET": valid}, "payment.mode"},
		{map[string]string{"SECKILL_PAYMENT_WEBHOOK_SECRET": valid}, "payment.mode"},
		{map[string]string{"SECKILL_REDIS_ADDRS": "127.0.0.1:6379", "SECKILL_PAYMENT_MODE": "trusted",
			"SECKILL_PAYMENT_WEBHOOK_SECRET": "whsec_not-base64-hunter2"}, "payment.mode"},
		// Malformed keys.
		{map[string]string{"SECKILL_PAYMENT_MODE": "webhook", "SECKILL_PAYMENT_WEBHOOK_SECRET": "hunter2-hunter2-hunter2-hunter2-hunter2"}, "payment.webhook_secret"},
		{map[string]string{"SECKILL_PAYMENT_MODE": "webhook", "SECKILL_PAYMENT_WEBHOOK_SECRET": valid[len("whsec_"):]}, "payment.webhook_secret"},
		{map[string]string{"SECKILL_PAYMENT_MODE": "webhook", "SECKILL_PAYMENT_WEBHOOK_SECRET": "whsec_hunter2!!not*base64"}, "payment.webhook_secret"},
		{map[string]string{"SECKILL_PAYMENT_MODE": "webhook", "SECKILL_PAYMENT_WEBHOOK_SECRET": whsec(23, 0x5A)}, "payment.webhook_secret"},
		{map[string]string{"SECKILL_PAYMENT_MODE": "webhook", "SECKILL_PAYMENT_WEBHOOK_SECRET": whsec(65, 0x5A)}, "payment.webhook_secret"},
		{map[string]string{"SECKILL_PAYMENT_MODE": "webhook", "SECKILL_PAYMENT_WEBHOOK_SECRET": "whsec_"}, "payment.webhook_secret"},
		// One bad key among good ones.
		{map[string]string{"SECKILL_PAYMENT_MODE": "webhook", "SECKILL_PAYMENT_WEBHOOK_SECRET": valid + ", whsec_hunter2"}, "payment.webhook_secret"},
		// The currency: three capital letters.
		{map[string]string{"SECKILL_PAYMENT_CURRENCY": "usd"}, "payment.currency"},
		{map[string]string{"SECKILL_PAYMENT_CURRENCY": "Usd"}, "payment.currency"},
		{map[string]string{"SECKILL_PAYMENT_CURRENCY": "US"}, "payment.currency"},
		{map[string]string{"SECKILL_PAYMENT_CURRENCY": "USDT"}, "payment.currency"},
		{map[string]string{"SECKILL_PAYMENT_CURRENCY": "U$D"}, "payment.currency"},
		{map[string]string{"SECKILL_PAYMENT_CURRENCY": "US1"}, "payment.currency"},
		{map[string]string{"SECKILL_PAYMENT_CURRENCY": "ÉUR"}, "payment.currency"},
	} {
		_, err := Load("", env(tc.env))
		var ce *Error
		require.ErrorAs(t, err, &ce, "%v", tc.env)
		assert.Equal(t, tc.key, ce.Key, "%v: %v", tc.env, err)
		assert.Contains(t, err.Error(), tc.key+" ("+envName(tc.key)+")")
		msg := err.Error()
		for _, s := range (Payment{WebhookSecret: tc.env["SECKILL_PAYMENT_WEBHOOK_SECRET"]}).Secrets() {
			if key := strings.TrimPrefix(s, "whsec_"); key != "" {
				assert.NotContains(t, msg, key, "the error shows a webhook key")
			}
		}
		assert.NotContains(t, msg, "hunter2", "the error shows a webhook key")
		assert.NotContains(t, msg, valid[len("whsec_"):len("whsec_")+12], "the error shows a webhook key")
	}
}

// A webhook key from a file is as secret as one from the environment.
func TestPaymentSecretFromFileIsNotShown(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	require.NoError(t, os.WriteFile(path, []byte("payment:\n  mode: webhook\n  webhook_secret: whsec_hunter2-in-a-file\n"), 0o600))
	_, err := Load(path, env(nil))
	var ce *Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "payment.webhook_secret", ce.Key)
	assert.NotContains(t, err.Error(), "hunter2")
}

// Several keys, comma-separated with spaces around them (a rotation), are
// each accepted; the bounds of a key's length are 24 and 64 bytes.
func TestPaymentWebhookSecrets(t *testing.T) {
	a, b, c := whsec(24, 1), whsec(32, 2), whsec(64, 3)
	cfg, err := Load("", env(map[string]string{
		"SECKILL_REDIS_ADDRS":            "127.0.0.1:6379",
		"SECKILL_PAYMENT_MODE":           "webhook",
		"SECKILL_PAYMENT_WEBHOOK_SECRET": " " + a + " ,  " + b + ",\t" + c + " ,",
		"SECKILL_PAYMENT_CURRENCY":       "EUR",
	}))
	require.NoError(t, err)
	assert.Equal(t, []string{a, b, c}, cfg.Payment.Secrets())
	assert.Equal(t, "EUR", cfg.Payment.Currency)
	mode, err := cfg.PaymentConfirmation()
	require.NoError(t, err)
	assert.Equal(t, PaymentWebhook, mode)

	path := filepath.Join(t.TempDir(), "c.yaml")
	require.NoError(t, os.WriteFile(path, []byte("payment:\n  mode: webhook\n  currency: CNY\n  webhook_secret: \""+a+", "+b+"\"\n"), 0o600))
	cfg, err = Load(path, env(nil))
	require.NoError(t, err)
	assert.Equal(t, []string{a, b}, cfg.Payment.Secrets())
	assert.Equal(t, "CNY", cfg.Payment.Currency)
}
