package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/config"
	"github.com/seckill/seckill/internal/testutil"
)

// configs/production.example.yaml loads as `seckill serve --config` loads
// it (defaults, the file, then the environment; every variable known; the
// shopper identity and the payment confirmation settled), with the secrets
// set in the environment the way the file's header shows, and is what
// docs/operate/production.md asks for.
func TestProductionExampleConfig(t *testing.T) {
	root, err := testutil.ModuleRoot()
	require.NoError(t, err)
	path := filepath.Join(root, "configs", "production.example.yaml")
	text, err := os.ReadFile(path)
	require.NoError(t, err)

	// The header's export lines, run by a shell as an operator would.
	exports := regexp.MustCompile(`(?m)^#\s+(export SECKILL_\w+=.*)$`).FindAllStringSubmatch(string(text), -1)
	require.NotEmpty(t, exports, "the file shows how to set its secrets")
	var script strings.Builder
	names := []string{}
	for _, m := range exports {
		script.WriteString(m[1] + "\n")
		names = append(names, strings.SplitN(strings.TrimPrefix(m[1], "export "), "=", 2)[0])
	}
	script.WriteString("env\n")
	sh := exec.Command("bash", "--noprofile", "--norc", "-e", "-c", script.String())
	sh.Env = []string{"PATH=" + os.Getenv("PATH")}
	out, err := sh.Output()
	require.NoError(t, err, script.String())
	var environ []string
	for _, kv := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(kv, "SECKILL_") {
			environ = append(environ, kv)
		}
	}
	assert.ElementsMatch(t, []string{"SECKILL_ADMIN_TOKEN", "SECKILL_REDIS_PASSWORD", "SECKILL_MYSQL_DSN", "SECKILL_PAYMENT_WEBHOOK_SECRET"}, names)
	require.Len(t, environ, len(names), "every secret is set: %v", environ)

	logs := &testutil.SyncBuffer{}
	e := &env{environ: environ, stdout: logs, stderr: logs, configPath: path}
	cfg, _, err := e.load()
	require.NoError(t, err)
	assert.NotContains(t, logs.String(), "unknown environment variable")
	mode, err := cfg.ShopperAuth()
	require.NoError(t, err, "serve starts on it")
	payMode, err := cfg.PaymentConfirmation()
	require.NoError(t, err, "serve starts on it")

	assert.False(t, cfg.EmbeddedRedis(), "a real Redis")
	assert.GreaterOrEqual(t, len(cfg.Redis.Addrs), 3, "a Cluster (or Sentinels)")
	assert.False(t, cfg.EmbeddedSQL(), "the DSN comes from the environment")
	assert.Contains(t, cfg.MySQL.DSN, "tls=true")
	assert.NotEmpty(t, cfg.Redis.Password)
	assert.True(t, cfg.Redis.TLS.Enabled)
	assert.Equal(t, 1, cfg.Redis.WaitReplicas)
	assert.GreaterOrEqual(t, len(cfg.Admin.Token), 32)
	assert.Equal(t, config.AuthJWT, mode)
	assert.True(t, strings.HasPrefix(cfg.Auth.JWTJWKSURL, "https://"))
	assert.Equal(t, config.PaymentWebhook, payMode, "only a signed notification marks an order paid")
	assert.Len(t, cfg.Payment.Secrets(), 1)
	assert.Equal(t, "USD", cfg.Payment.Currency)
	assert.True(t, cfg.RateLimit.Enabled)
	assert.Positive(t, cfg.RateLimit.PerUser)
	assert.Positive(t, cfg.RateLimit.PerIP)
	assert.NotEmpty(t, cfg.RateLimit.TrustedProxies)
	assert.Equal(t, "json", cfg.Log.Format)

	// Without the webhook key a process started on the file stops at once
	// (exit 2), naming the key: payment.mode webhook needs one.
	bare := &env{stdout: logs, stderr: logs, configPath: path}
	_, _, err = bare.load()
	var ce *config.Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "payment.webhook_secret", ce.Key)
	assert.Equal(t, ExitBadConfig, ExitCode(err))

	// Without the other secrets the file still names MySQL: a process
	// started without SECKILL_MYSQL_DSN fails to log in rather than running
	// on an in-memory SQLite database.
	var hook []string
	for _, kv := range environ {
		if strings.HasPrefix(kv, "SECKILL_PAYMENT_WEBHOOK_SECRET=") {
			hook = append(hook, kv)
		}
	}
	require.Len(t, hook, 1)
	bare = &env{environ: hook, stdout: logs, stderr: logs, configPath: path}
	cfg, _, err = bare.load()
	require.NoError(t, err)
	assert.False(t, cfg.EmbeddedSQL())
	assert.Empty(t, privateStores(cfg, true))
}
