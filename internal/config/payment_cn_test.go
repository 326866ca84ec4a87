package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/payment/paytest"
)

func pkixDER(t *testing.T, pub any) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	require.NoError(t, err)
	return der
}

func pemOf(typ string, der []byte) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
}

// certificate is a self-signed certificate of k, as WeChat Pay's platform
// certificates carry its key.
func certificate(t *testing.T, k *rsa.PrivateKey) []byte {
	t.Helper()
	tpl := &x509.Certificate{SerialNumber: big.NewInt(42), Subject: pkix.Name{CommonName: "Tenpay.com Root CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &k.PublicKey, k)
	require.NoError(t, err)
	return der
}

const (
	alipayApp = "2021000123456789"
	mch       = "1230000109"
	v3Key     = "0123456789abcdefABCDEF0123456789"
)

func alipayEnv(key string) map[string]string {
	return map[string]string{"SECKILL_PAYMENT_MODE": "alipay", "SECKILL_PAYMENT_CURRENCY": "CNY",
		"SECKILL_PAYMENT_ALIPAY_APP_ID": alipayApp, "SECKILL_PAYMENT_ALIPAY_PUBLIC_KEY": key}
}

func wechatEnv(keys string) map[string]string {
	return map[string]string{"SECKILL_PAYMENT_MODE": "wechatpay", "SECKILL_PAYMENT_CURRENCY": "CNY",
		"SECKILL_PAYMENT_WECHATPAY_MCH_ID": mch, "SECKILL_PAYMENT_WECHATPAY_API_V3_KEY": v3Key,
		"SECKILL_PAYMENT_WECHATPAY_PLATFORM_PUBLIC_KEY": keys}
}

func TestProviderVariablesAreKnown(t *testing.T) {
	assert.Empty(t, UnknownEnv([]string{"SECKILL_PAYMENT_ALIPAY_APP_ID=x", "SECKILL_PAYMENT_ALIPAY_PUBLIC_KEY=x",
		"SECKILL_PAYMENT_WECHATPAY_MCH_ID=x", "SECKILL_PAYMENT_WECHATPAY_API_V3_KEY=x", "SECKILL_PAYMENT_WECHATPAY_PLATFORM_PUBLIC_KEY=x"}))
}

// Alipay's key in every form an operator may have it: PEM, PEM on one line
// with \n (an environment variable), the base64 the console shows, a file
// of either, and two at once during a rotation.
func TestAlipayKeyForms(t *testing.T) {
	k0, k1 := &paytest.Keys()[0].PublicKey, &paytest.Keys()[1].PublicKey
	der := pkixDER(t, k0)
	dir := t.TempDir()
	pemFile, b64File := filepath.Join(dir, "alipay.pem"), filepath.Join(dir, "alipay.txt")
	require.NoError(t, os.WriteFile(pemFile, []byte(pemOf("PUBLIC KEY", der)), 0o600))
	require.NoError(t, os.WriteFile(b64File, []byte(base64.StdEncoding.EncodeToString(der)+"\n"), 0o600))
	for name, tc := range map[string]struct {
		val  string
		want []*rsa.PublicKey
	}{
		"PEM":              {pemOf("PUBLIC KEY", der), []*rsa.PublicKey{k0}},
		"PEM, one line":    {strings.ReplaceAll(pemOf("PUBLIC KEY", der), "\n", `\n`), []*rsa.PublicKey{k0}},
		"PKCS #1 PEM":      {pemOf("RSA PUBLIC KEY", x509.MarshalPKCS1PublicKey(k0)), []*rsa.PublicKey{k0}},
		"console base64":   {base64.StdEncoding.EncodeToString(der), []*rsa.PublicKey{k0}},
		"a PEM file":       {pemFile, []*rsa.PublicKey{k0}},
		"a base64 file":    {b64File, []*rsa.PublicKey{k0}},
		"two, for a while": {pemFile + ", " + base64.StdEncoding.EncodeToString(pkixDER(t, k1)), []*rsa.PublicKey{k0, k1}},
	} {
		c, err := Load("", env(alipayEnv(tc.val)))
		require.NoError(t, err, name)
		assert.Equal(t, "alipay", c.Payment.Mode)
		got, err := c.Payment.Alipay.PublicKeys()
		require.NoError(t, err, name)
		require.Len(t, got, len(tc.want), name)
		for i := range got {
			assert.True(t, got[i].Equal(tc.want[i]), name)
		}
	}
}

func TestWeChatPayKeyForms(t *testing.T) {
	k0, k1 := paytest.Keys()[0], paytest.Keys()[1]
	cert := certificate(t, k0)
	file := filepath.Join(t.TempDir(), "wechatpay_platform.pem")
	require.NoError(t, os.WriteFile(file, []byte(pemOf("CERTIFICATE", cert)), 0o600))
	val := "5157F09EFDC096DE15EBE81A47057A7232F1B8E1=" + pemOf("CERTIFICATE", cert) +
		", PUB_KEY_ID_0112345678901234567890123456789=" + pemOf("PUBLIC KEY", pkixDER(t, &k1.PublicKey)) +
		",3775b6a45acd588826d15e583a95f5dd2c325a7b=" + file +
		",AAAA=" + base64.StdEncoding.EncodeToString(cert)
	c, err := Load("", env(wechatEnv(val)))
	require.NoError(t, err)
	got, err := c.Payment.WeChatPay.PlatformKeys()
	require.NoError(t, err)
	assert.Len(t, got, 4)
	assert.True(t, got["5157F09EFDC096DE15EBE81A47057A7232F1B8E1"].Equal(&k0.PublicKey))
	assert.True(t, got["PUB_KEY_ID_0112345678901234567890123456789"].Equal(&k1.PublicKey))
	assert.True(t, got["3775B6A45ACD588826D15E583A95F5DD2C325A7B"].Equal(&k0.PublicKey), "serials are kept in upper case")
	assert.True(t, got["AAAA"].Equal(&k0.PublicKey))
}

// Each bad setting of the two modes is an *Error naming its key and
// variable, and no key, valid or not, nor the API v3 key appears in it.
func TestBadProviderValuesNameTheKey(t *testing.T) {
	k0 := paytest.Keys()[0]
	goodPEM := pemOf("PUBLIC KEY", pkixDER(t, &k0.PublicKey))
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	require.NoError(t, err)
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	privPEM := pemOf("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(k0))
	secrets := []string{goodPEM, privPEM, v3Key, base64.StdEncoding.EncodeToString(pkixDER(t, &k0.PublicKey))[:40]}
	with := func(m map[string]string, kv ...string) map[string]string {
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	wx := "ABC=" + goodPEM
	for name, tc := range map[string]struct {
		env map[string]string
		key string
	}{
		"alipay: no app":              {with(alipayEnv(goodPEM), "SECKILL_PAYMENT_ALIPAY_APP_ID", ""), "payment.alipay.app_id"},
		"alipay: app not digits":      {with(alipayEnv(goodPEM), "SECKILL_PAYMENT_ALIPAY_APP_ID", "app-1"), "payment.alipay.app_id"},
		"alipay: in USD":              {with(alipayEnv(goodPEM), "SECKILL_PAYMENT_CURRENCY", "USD"), "payment.currency"},
		"alipay: no key":              {alipayEnv(""), "payment.alipay.public_key"},
		"alipay: a private key":       {alipayEnv(privPEM), "payment.alipay.public_key"},
		"alipay: truncated PEM":       {alipayEnv(goodPEM[:100]), "payment.alipay.public_key"},
		"alipay: truncated base64":    {alipayEnv(secrets[3]), "payment.alipay.public_key"},
		"alipay: 1024 bits":           {alipayEnv(pemOf("PUBLIC KEY", pkixDER(t, &small.PublicKey))), "payment.alipay.public_key"},
		"alipay: an EC key":           {alipayEnv(pemOf("PUBLIC KEY", pkixDER(t, &ec.PublicKey))), "payment.alipay.public_key"},
		"alipay: no such file":        {alipayEnv("/nonexistent/alipay.pem"), "payment.alipay.public_key"},
		"alipay: one good, one bad":   {alipayEnv(goodPEM + ",junk"), "payment.alipay.public_key"},
		"alipay settings, webhook":    {map[string]string{"SECKILL_PAYMENT_MODE": "trusted", "SECKILL_PAYMENT_ALIPAY_APP_ID": alipayApp}, "payment.mode"},
		"wechatpay settings, alipay":  {with(alipayEnv(goodPEM), "SECKILL_PAYMENT_WECHATPAY_API_V3_KEY", v3Key), "payment.mode"},
		"wechatpay: no mch":           {with(wechatEnv(wx), "SECKILL_PAYMENT_WECHATPAY_MCH_ID", ""), "payment.wechatpay.mch_id"},
		"wechatpay: mch not digits":   {with(wechatEnv(wx), "SECKILL_PAYMENT_WECHATPAY_MCH_ID", "m1"), "payment.wechatpay.mch_id"},
		"wechatpay: no v3 key":        {with(wechatEnv(wx), "SECKILL_PAYMENT_WECHATPAY_API_V3_KEY", ""), "payment.wechatpay.api_v3_key"},
		"wechatpay: a short v3 key":   {with(wechatEnv(wx), "SECKILL_PAYMENT_WECHATPAY_API_V3_KEY", v3Key[:31]), "payment.wechatpay.api_v3_key"},
		"wechatpay: no platform key":  {wechatEnv(""), "payment.wechatpay.platform_public_key"},
		"wechatpay: no serial":        {wechatEnv(goodPEM), "payment.wechatpay.platform_public_key"},
		"wechatpay: a serial with -":  {wechatEnv("AB-C=" + goodPEM), "payment.wechatpay.platform_public_key"},
		"wechatpay: a serial twice":   {wechatEnv(wx + ",abc=" + goodPEM), "payment.wechatpay.platform_public_key"},
		"wechatpay: a private key":    {wechatEnv("ABC=" + privPEM), "payment.wechatpay.platform_public_key"},
		"wechatpay: junk":             {wechatEnv("ABC=junk"), "payment.wechatpay.platform_public_key"},
		"wechatpay settings, trusted": {map[string]string{"SECKILL_PAYMENT_MODE": "trusted", "SECKILL_PAYMENT_WECHATPAY_MCH_ID": mch}, "payment.mode"},
	} {
		_, err := Load("", env(tc.env))
		var ce *Error
		require.ErrorAs(t, err, &ce, name)
		assert.Equal(t, tc.key, ce.Key, "%s: %v", name, err)
		assert.Contains(t, err.Error(), envName(tc.key), name)
		for _, s := range secrets {
			assert.NotContains(t, err.Error(), s, "%s: a key or secret is never printed", name)
		}
		assert.NotContains(t, err.Error(), "MII", "%s: nothing of a key's base64", name)
	}
}
