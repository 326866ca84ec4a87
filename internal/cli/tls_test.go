package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A TLS setting for Redis that cannot be used stops every command with exit
// code 2, naming the key and saying why, before anything is dialled.
func TestRedisTLSSettingsExitTwo(t *testing.T) {
	dir := t.TempDir()
	cert := filepath.Join(dir, "client.pem")
	require.NoError(t, os.WriteFile(cert, []byte("not a certificate"), 0o600))
	base := map[string]string{"SECKILL_REDIS_ADDRS": "127.0.0.1:1", "SECKILL_REDIS_TLS_ENABLED": "true", "SECKILL_AUTH_MODE": "header", "SECKILL_PAYMENT_MODE": "trusted"}
	for _, tc := range []struct {
		env       map[string]string
		key, says string
	}{
		{map[string]string{"SECKILL_REDIS_TLS_INSECURE_SKIP_VERIFY": "true"},
			"redis.tls.insecure_skip_verify (SECKILL_REDIS_TLS_INSECURE_SKIP_VERIFY)", "anyone on the network path"},
		{map[string]string{"SECKILL_REDIS_TLS_CA_FILE": filepath.Join(dir, "missing.pem")},
			"redis.tls.ca_file (SECKILL_REDIS_TLS_CA_FILE)", "no such file or directory"},
		{map[string]string{"SECKILL_REDIS_TLS_CERT_FILE": cert},
			"redis.tls.key_file (SECKILL_REDIS_TLS_KEY_FILE)", "a client certificate needs its key"},
		{map[string]string{"SECKILL_REDIS_TLS_CERT_FILE": cert, "SECKILL_REDIS_TLS_KEY_FILE": cert},
			"redis.tls.cert_file (SECKILL_REDIS_TLS_CERT_FILE)", "holds none"},
	} {
		env := map[string]string{}
		for k, v := range base {
			env[k] = v
		}
		for k, v := range tc.env {
			env[k] = v
		}
		for _, cmd := range []string{"serve", "migrate"} {
			err := Run(t.Context(), []string{cmd}, envOf(env), &bytes.Buffer{}, &bytes.Buffer{})
			require.Error(t, err, "%s %v", cmd, tc.env)
			assert.Equal(t, ExitBadConfig, ExitCode(err), "%s: %v", cmd, err)
			assert.ErrorContains(t, err, tc.key, cmd)
			assert.ErrorContains(t, err, tc.says, cmd)
		}
	}
}
