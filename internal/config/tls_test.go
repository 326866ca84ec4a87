package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/testutil"
)

// pki is a CA and a client certificate signed by it, as PEM files.
type pki struct {
	ca, cert, key, otherKey string
}

func writePKI(t *testing.T) pki {
	t.Helper()
	dir := t.TempDir()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		return k
	}
	write := func(name, typ string, der []byte) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
		return path
	}
	writeKey := func(name string, k *ecdsa.PrivateKey) string {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		require.NoError(t, err)
		return write(name, "PRIVATE KEY", der)
	}
	caKey, clientKey := newKey(), newKey()
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	client := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "seckill"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
	}
	clientDER, err := x509.CreateCertificate(rand.Reader, client, ca, &clientKey.PublicKey, caKey)
	require.NoError(t, err)
	return pki{
		ca:       write("ca.pem", "CERTIFICATE", caDER),
		cert:     write("client.pem", "CERTIFICATE", clientDER),
		key:      writeKey("client-key.pem", clientKey),
		otherKey: writeKey("other-key.pem", newKey()),
	}
}

// tlsEnv is a valid configuration with TLS to a standalone Redis, plus kv.
func tlsEnv(p pki, kv map[string]string) func(string) string {
	m := map[string]string{
		"SECKILL_REDIS_ADDRS":         "redis.test:6380",
		"SECKILL_AUTH_MODE":           "header",
		"SECKILL_PAYMENT_MODE":        "trusted",
		"SECKILL_REDIS_TLS_ENABLED":   "true",
		"SECKILL_REDIS_TLS_CA_FILE":   p.ca,
		"SECKILL_REDIS_TLS_CERT_FILE": p.cert,
		"SECKILL_REDIS_TLS_KEY_FILE":  p.key,
	}
	for k, v := range kv {
		m[k] = v
	}
	return env(m)
}

func TestRedisTLSLoads(t *testing.T) {
	p := writePKI(t)
	c, err := Load("", tlsEnv(p, map[string]string{"SECKILL_REDIS_TLS_SERVER_NAME": "cache.shop.test"}))
	require.NoError(t, err)
	assert.Equal(t, RedisTLS{Enabled: true, CAFile: p.ca, CertFile: p.cert, KeyFile: p.key, ServerName: "cache.shop.test"}, c.Redis.TLS)

	tc, err := c.Redis.TLS.ClientConfig()
	require.NoError(t, err)
	require.NotNil(t, tc)
	assert.Equal(t, "cache.shop.test", tc.ServerName)
	assert.False(t, tc.InsecureSkipVerify)
	assert.Equal(t, uint16(tls.VersionTLS12), tc.MinVersion)
	require.NotNil(t, tc.RootCAs)
	require.Len(t, tc.Certificates, 1)
	leaf, err := x509.ParseCertificate(tc.Certificates[0].Certificate[0])
	require.NoError(t, err)
	assert.Equal(t, "seckill", leaf.Subject.CommonName)

	// No CA file: the system's roots (RootCAs nil); no client certificate.
	c, err = Load("", tlsEnv(p, map[string]string{"SECKILL_REDIS_TLS_CA_FILE": "", "SECKILL_REDIS_TLS_CERT_FILE": "", "SECKILL_REDIS_TLS_KEY_FILE": ""}))
	require.NoError(t, err)
	tc, err = c.Redis.TLS.ClientConfig()
	require.NoError(t, err)
	assert.Nil(t, tc.RootCAs)
	assert.Empty(t, tc.Certificates)
	assert.Empty(t, tc.ServerName, "crypto/tls then verifies the host of each address")

	// Off by default: no TLS configuration at all.
	c, err = Load("", env(nil))
	require.NoError(t, err)
	tc, err = c.Redis.TLS.ClientConfig()
	require.NoError(t, err)
	assert.Nil(t, tc)
}

func TestRedisTLSKeysHaveVariables(t *testing.T) {
	var environ []string
	for _, k := range []string{"ENABLED", "CA_FILE", "CERT_FILE", "KEY_FILE", "SERVER_NAME", "INSECURE_SKIP_VERIFY"} {
		environ = append(environ, "SECKILL_REDIS_TLS_"+k+"=x")
	}
	assert.Empty(t, UnknownEnv(environ))
}

// insecure_skip_verify can be set by no file and no variable: a server that
// does not verify Redis's certificate talks to whoever answers.
func TestRedisTLSInsecureSkipVerifyIsRefused(t *testing.T) {
	p := writePKI(t)
	_, err := Load("", tlsEnv(p, map[string]string{"SECKILL_REDIS_TLS_INSECURE_SKIP_VERIFY": "true"}))
	var ce *Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "redis.tls.insecure_skip_verify", ce.Key)
	assert.ErrorContains(t, err, "redis.tls.insecure_skip_verify (SECKILL_REDIS_TLS_INSECURE_SKIP_VERIFY)")
	assert.ErrorContains(t, err, "must be false")
	assert.ErrorContains(t, err, "anyone on the network path")

	path := filepath.Join(t.TempDir(), "c.yaml")
	require.NoError(t, os.WriteFile(path, []byte("redis:\n  tls:\n    insecure_skip_verify: true\n"), 0o600))
	_, err = Load(path, tlsEnv(p, nil))
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "redis.tls.insecure_skip_verify", ce.Key)

	// Even with TLS off.
	_, err = Load("", env(map[string]string{"SECKILL_REDIS_TLS_INSECURE_SKIP_VERIFY": "true"}))
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "redis.tls.insecure_skip_verify", ce.Key)
}

// A program that builds its Config itself (a test against a server whose
// CA it does not have) may still turn verification off.
func TestRedisTLSInsecureSkipVerifyThroughTheGoAPI(t *testing.T) {
	tc, err := RedisTLS{Enabled: true, InsecureSkipVerify: true}.ClientConfig()
	require.NoError(t, err)
	assert.True(t, tc.InsecureSkipVerify)
}

func TestRedisTLSBadSettingsNameTheKey(t *testing.T) {
	p := writePKI(t)
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	require.NoError(t, os.WriteFile(notPEM, []byte("hello"), 0o600))
	unreadable := filepath.Join(dir, "unreadable.pem")
	require.NoError(t, os.WriteFile(unreadable, []byte("x"), 0o000))
	missing := filepath.Join(dir, "missing.pem")
	huge := filepath.Join(dir, "huge.pem")
	require.NoError(t, os.WriteFile(huge, make([]byte, maxPEMBytes+1), 0o600))

	for _, tc := range []struct {
		name string
		env  map[string]string
		key  string
		want string
	}{
		{"missing CA", map[string]string{"SECKILL_REDIS_TLS_CA_FILE": missing}, "redis.tls.ca_file", "no such file"},
		{"CA a directory", map[string]string{"SECKILL_REDIS_TLS_CA_FILE": dir}, "redis.tls.ca_file", "not a regular file"},
		{"CA not PEM", map[string]string{"SECKILL_REDIS_TLS_CA_FILE": notPEM}, "redis.tls.ca_file", "holds none"},
		{"CA a key", map[string]string{"SECKILL_REDIS_TLS_CA_FILE": p.key}, "redis.tls.ca_file", "holds none"},
		{"CA too large", map[string]string{"SECKILL_REDIS_TLS_CA_FILE": huge}, "redis.tls.ca_file", "larger than 1 MiB"},
		{"cert without key", map[string]string{"SECKILL_REDIS_TLS_KEY_FILE": ""}, "redis.tls.key_file", "must be set with redis.tls.cert_file"},
		{"key without cert", map[string]string{"SECKILL_REDIS_TLS_CERT_FILE": ""}, "redis.tls.cert_file", "must be set with redis.tls.key_file"},
		{"missing cert", map[string]string{"SECKILL_REDIS_TLS_CERT_FILE": missing}, "redis.tls.cert_file", "no such file"},
		{"cert not PEM", map[string]string{"SECKILL_REDIS_TLS_CERT_FILE": notPEM}, "redis.tls.cert_file", "holds none"},
		{"cert and key swapped", map[string]string{"SECKILL_REDIS_TLS_CERT_FILE": p.key, "SECKILL_REDIS_TLS_KEY_FILE": p.cert}, "redis.tls.cert_file", "holds none"},
		{"missing key", map[string]string{"SECKILL_REDIS_TLS_KEY_FILE": missing}, "redis.tls.key_file", "no such file"},
		{"key not PEM", map[string]string{"SECKILL_REDIS_TLS_KEY_FILE": notPEM}, "redis.tls.key_file", "private key of redis.tls.cert_file"},
		{"another certificate's key", map[string]string{"SECKILL_REDIS_TLS_KEY_FILE": p.otherKey}, "redis.tls.key_file", "does not match"},
		{"settings with TLS off", map[string]string{"SECKILL_REDIS_TLS_ENABLED": "false"}, "redis.tls.enabled", "must be true when redis.tls.ca_file is set"},
		{"server name with TLS off", map[string]string{"SECKILL_REDIS_TLS_ENABLED": "", "SECKILL_REDIS_TLS_CA_FILE": "",
			"SECKILL_REDIS_TLS_CERT_FILE": "", "SECKILL_REDIS_TLS_KEY_FILE": "", "SECKILL_REDIS_TLS_SERVER_NAME": "x"}, "redis.tls.enabled", "server_name"},
		{"TLS to the embedded Redis", map[string]string{"SECKILL_REDIS_ADDRS": ""}, "redis.tls.enabled", "needs redis.addrs"},
		{"enabled not a bool", map[string]string{"SECKILL_REDIS_TLS_ENABLED": "yes please"}, "redis.tls.enabled", "true or false"},
	} {
		_, err := Load("", tlsEnv(p, tc.env))
		var ce *Error
		require.ErrorAs(t, err, &ce, tc.name)
		assert.Equal(t, tc.key, ce.Key, "%s: %v", tc.name, err)
		assert.ErrorContains(t, err, tc.key+" ("+envName(tc.key)+")", tc.name)
		assert.ErrorContains(t, err, tc.want, tc.name)
	}
	if os.Geteuid() != 0 { // root reads a file whatever its mode
		_, err := Load("", tlsEnv(p, map[string]string{"SECKILL_REDIS_TLS_CA_FILE": unreadable}))
		var ce *Error
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, "redis.tls.ca_file", ce.Key)
		assert.ErrorContains(t, err, "permission denied")
	}
}

// A key file's content is a secret: an error about it never quotes it.
func TestRedisTLSErrorsQuoteNoFileContent(t *testing.T) {
	p := writePKI(t)
	key, err := os.ReadFile(p.key)
	require.NoError(t, err)
	body := strings.Split(strings.TrimSpace(string(key)), "\n")[1]
	for _, kv := range []map[string]string{
		{"SECKILL_REDIS_TLS_CA_FILE": p.key},
		{"SECKILL_REDIS_TLS_CERT_FILE": p.key, "SECKILL_REDIS_TLS_KEY_FILE": p.cert},
		{"SECKILL_REDIS_TLS_KEY_FILE": p.otherKey},
	} {
		_, err := Load("", tlsEnv(p, kv))
		require.Error(t, err)
		assert.NotContains(t, err.Error(), body[:16], "%v", kv)
	}
}

// The example in docs/operate/deploy.md loads, with its file paths replaced by
// the environment as a deployment may do. (internal/app runs the sale on it.)
func TestDocumentedTLSExampleLoads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seckill.yaml")
	require.NoError(t, os.WriteFile(path, testutil.DocExample(t, "docs/operate/deploy.md", "tls-example"), 0o600))
	p := writePKI(t)
	c, err := Load(path, env(map[string]string{
		"SECKILL_REDIS_TLS_CA_FILE":   p.ca,
		"SECKILL_REDIS_TLS_CERT_FILE": p.cert,
		"SECKILL_REDIS_TLS_KEY_FILE":  p.key,
	}))
	require.NoError(t, err)
	assert.True(t, c.Redis.TLS.Enabled)
	assert.NotEmpty(t, c.Redis.Addrs)
	assert.Contains(t, c.MySQL.DSN, "tls=true")
}
