package cli

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/apitest"
	"github.com/seckill/seckill/internal/auth"
	"github.com/seckill/seckill/internal/buildinfo"
	"github.com/seckill/seckill/internal/config"
	"github.com/seckill/seckill/internal/testsvc"
)

func envOf(kv map[string]string) []string {
	var env []string
	for k, v := range kv {
		env = append(env, k+"="+v)
	}
	return env
}

func TestBadConfigExitsTwoNamingTheKey(t *testing.T) {
	var out, errOut bytes.Buffer
	err := Run(t.Context(), []string{"serve"}, envOf(map[string]string{"SECKILL_HTTP_ADDR": "not-an-addr"}), &out, &errOut)
	require.Error(t, err)
	assert.Equal(t, ExitBadConfig, ExitCode(err))
	assert.Contains(t, err.Error(), "http.addr")

	// Values that do not even decode as their key's type, from the
	// environment or from --config.
	for name, env := range map[string]map[string]string{
		"worker.batch_size (SECKILL_WORKER_BATCH_SIZE)":   {"SECKILL_WORKER_BATCH_SIZE": "many"},
		"http.read_timeout (SECKILL_HTTP_READ_TIMEOUT)":   {"SECKILL_HTTP_READ_TIMEOUT": "soon"},
		"rate_limit.enabled (SECKILL_RATE_LIMIT_ENABLED)": {"SECKILL_RATE_LIMIT_ENABLED": "maybe"},
	} {
		err := Run(t.Context(), []string{"serve"}, envOf(env), &bytes.Buffer{}, &bytes.Buffer{})
		assert.Equal(t, ExitBadConfig, ExitCode(err), "%s: %v", name, err)
		assert.ErrorContains(t, err, name)
	}
	path := filepath.Join(t.TempDir(), "seckill.yaml")
	require.NoError(t, os.WriteFile(path, []byte("redis:\n  addrs: [[1]]\n"), 0o600))
	err = Run(t.Context(), []string{"serve", "--config", path}, envOf(nil), &bytes.Buffer{}, &bytes.Buffer{})
	assert.Equal(t, ExitBadConfig, ExitCode(err), "%v", err)
	assert.ErrorContains(t, err, "redis.addrs (SECKILL_REDIS_ADDRS)")
}

func TestUsageErrorsExitTwo(t *testing.T) {
	for _, args := range [][]string{{"serve", "--nope"}, {"nope"}, {"serve", "--api-only", "--workers-only"}, {"version", "extra"}, {"queue", "nosuch"}, {"queue", "stats", "extra"}, {"token", "extra"}} {
		err := Run(t.Context(), args, envOf(nil), &bytes.Buffer{}, &bytes.Buffer{})
		require.Error(t, err, "%v", args)
		assert.Equal(t, ExitBadConfig, ExitCode(err), "%v: %v", args, err)
	}
}

func TestHelpHasExamples(t *testing.T) {
	for _, cmd := range []string{"serve", "worker", "migrate", "seed", "verify", "version", "token", "queue", "queue stats", "queue dead", "queue requeue", "queue drop"} {
		var out bytes.Buffer
		require.NoError(t, Run(t.Context(), append(strings.Fields(cmd), "--help"), envOf(nil), &out, &out))
		assert.Contains(t, out.String(), "Examples:", cmd)
	}
}

// TestVersion: `seckill version` names the release and the licence.
func TestVersion(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, Run(t.Context(), []string{"version"}, envOf(nil), &out, &out))
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Len(t, lines, 2, out.String())
	assert.True(t, strings.HasPrefix(lines[0], "seckill "+buildinfo.Version+" "), lines[0])
	assert.Equal(t, "Licensed under the Apache License 2.0 (Apache-2.0): https://www.apache.org/licenses/LICENSE-2.0", lines[1])
}

// serve runs `seckill serve` with env until the test ends and returns its base URL.
func serve(t *testing.T, env map[string]string) string {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", testsvc.FreePort(t))
	env["SECKILL_HTTP_ADDR"] = addr
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, []string{"serve"}, envOf(env), &bytes.Buffer{}, io.Discard) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop within 30s of cancellation")
		}
	})
	base := "http://" + addr
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := checked(t).Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		select {
		case err := <-done:
			t.Fatalf("serve exited early: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not answer /healthz: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestServeEmbeddedByDefault(t *testing.T) {
	base := serve(t, map[string]string{})
	body := get(t, base+"/healthz", http.StatusOK)
	assert.Contains(t, body, `"embedded":true`)
	get(t, base+"/readyz", http.StatusOK)
	assert.Contains(t, get(t, base+"/metrics", http.StatusOK), "seckill_http_request_duration_seconds")
}

func TestServeExternal(t *testing.T) {
	base := serve(t, map[string]string{
		"SECKILL_REDIS_ADDRS":  testsvc.Env(t, testsvc.EnvRedis),
		"SECKILL_MYSQL_DSN":    testsvc.MySQL(t),
		"SECKILL_ADMIN_TOKEN":  "test-admin-token-0123456789abcdef",
		"SECKILL_AUTH_MODE":    "header",
		"SECKILL_PAYMENT_MODE": "trusted",
	})
	body := get(t, base+"/healthz", http.StatusOK)
	assert.Contains(t, body, `"embedded":false`)
	get(t, base+"/readyz", http.StatusOK)
}

// TestServeExternalNeedsAuthMode: with a real Redis or MySQL, serve refuses
// to start until auth.mode says whether to trust X-User-ID; the embedded
// quick start needs nothing.
func TestServeExternalNeedsAuthMode(t *testing.T) {
	for name, env := range map[string]map[string]string{
		"redis": {"SECKILL_REDIS_ADDRS": "127.0.0.1:1"},
		"mysql": {"SECKILL_MYSQL_DSN": "root@tcp(127.0.0.1:1)/x"},
	} {
		var errOut bytes.Buffer
		err := Run(t.Context(), []string{"serve"}, envOf(env), &bytes.Buffer{}, &errOut)
		require.Error(t, err, name)
		assert.Equal(t, ExitBadConfig, ExitCode(err), name)
		assert.Contains(t, err.Error(), "auth.mode (SECKILL_AUTH_MODE)", name)
	}
	for name, env := range map[string]map[string]string{
		"short admin token": {"SECKILL_REDIS_ADDRS": "127.0.0.1:1", "SECKILL_AUTH_MODE": "header", "SECKILL_PAYMENT_MODE": "trusted", "SECKILL_ADMIN_TOKEN": "only-sixteen-chars-x"},
		"jwt without a key": {"SECKILL_REDIS_ADDRS": "127.0.0.1:1", "SECKILL_AUTH_MODE": "jwt", "SECKILL_PAYMENT_MODE": "trusted"},
		"short jwt secret":  {"SECKILL_REDIS_ADDRS": "127.0.0.1:1", "SECKILL_AUTH_MODE": "jwt", "SECKILL_PAYMENT_MODE": "trusted", "SECKILL_AUTH_JWT_SECRET": "short"},
	} {
		err := Run(t.Context(), []string{"serve"}, envOf(env), &bytes.Buffer{}, &bytes.Buffer{})
		assert.Equal(t, ExitBadConfig, ExitCode(err), "%s: %v", name, err)
	}
}

// TestServeExternalNeedsPaymentMode: like auth.mode, payment.mode must say
// who confirms a payment before serve starts on a real Redis or MySQL.
func TestServeExternalNeedsPaymentMode(t *testing.T) {
	for name, env := range map[string]map[string]string{
		"redis": {"SECKILL_REDIS_ADDRS": "127.0.0.1:1", "SECKILL_AUTH_MODE": "header"},
		"mysql": {"SECKILL_MYSQL_DSN": "root@tcp(127.0.0.1:1)/x", "SECKILL_AUTH_MODE": "header"},
	} {
		err := Run(t.Context(), []string{"serve"}, envOf(env), &bytes.Buffer{}, &bytes.Buffer{})
		require.Error(t, err, name)
		assert.Equal(t, ExitBadConfig, ExitCode(err), name)
		assert.Contains(t, err.Error(), "payment.mode (SECKILL_PAYMENT_MODE)", name)
	}
	err := Run(t.Context(), []string{"serve"}, envOf(map[string]string{
		"SECKILL_REDIS_ADDRS": "127.0.0.1:1", "SECKILL_AUTH_MODE": "header", "SECKILL_PAYMENT_MODE": "webhook",
	}), &bytes.Buffer{}, &bytes.Buffer{})
	assert.Equal(t, ExitBadConfig, ExitCode(err), "webhook without a secret: %v", err)
	assert.ErrorContains(t, err, "payment.webhook_secret (SECKILL_PAYMENT_WEBHOOK_SECRET)")
}

func TestTokenCommand(t *testing.T) {
	const secret = "token-command-secret-0123456789abcdef"
	env := map[string]string{"SECKILL_AUTH_MODE": "jwt", "SECKILL_AUTH_JWT_SECRET": secret, "SECKILL_RATE_LIMIT_ENABLE": "false"}
	var out, errOut bytes.Buffer
	require.NoError(t, Run(t.Context(), []string{"token", "--user", "alice", "--user", "bob", "--ttl", "10m"}, envOf(env), &out, &errOut))
	assert.Contains(t, errOut.String(), "SECKILL_RATE_LIMIT_ENABLE", "a misspelt variable is named")

	cfg := config.Auth{Mode: config.AuthJWT, JWTSecret: secret, JWTUserClaim: "sub", JWTLeeway: time.Second}
	v, err := auth.New(t.Context(), cfg, nil)
	require.NoError(t, err)
	lines := strings.Fields(out.String())
	require.Len(t, lines, 2)
	for i, want := range []string{"alice", "bob"} {
		user, err := v.Verify(t.Context(), lines[i])
		require.NoError(t, err)
		assert.Equal(t, want, user)
	}

	for name, args := range map[string][]string{
		"no user":  {"token"},
		"bad user": {"token", "--user", "al ice"},
		"bad ttl":  {"token", "--user", "alice", "--ttl", "-1h"},
	} {
		err := Run(t.Context(), args, envOf(env), &bytes.Buffer{}, &bytes.Buffer{})
		assert.Equal(t, ExitBadConfig, ExitCode(err), "%s: %v", name, err)
	}
	err = Run(t.Context(), []string{"token", "--user", "alice"}, nil, &bytes.Buffer{}, &bytes.Buffer{})
	assert.Equal(t, ExitBadConfig, ExitCode(err), "no secret: %v", err)
}

func TestUnreachableMySQLFailsClearly(t *testing.T) {
	err := Run(t.Context(), []string{"migrate"}, envOf(map[string]string{
		"SECKILL_MYSQL_DSN":             fmt.Sprintf("root@tcp(127.0.0.1:%d)/x", testsvc.FreePort(t)),
		"SECKILL_MYSQL_CONNECT_TIMEOUT": "300ms",
	}), &bytes.Buffer{}, &bytes.Buffer{})
	require.Error(t, err)
	assert.Equal(t, ExitFailure, ExitCode(err))
	assert.Contains(t, err.Error(), "unreachable")
}

// Configuration that waiting cannot cure exits 2 at once, naming what is
// wrong: a --config file that is missing or unreadable, a MySQL DSN naming
// a database that does not exist, or a user MySQL refuses.
func TestBadConfigurationExitsTwoAtOnce(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.yaml")
	garbled := filepath.Join(t.TempDir(), "garbled.yaml")
	require.NoError(t, os.WriteFile(garbled, []byte("http: {\n"), 0o600))
	for _, path := range []string{missing, garbled} {
		err := Run(t.Context(), []string{"serve", "--config", path}, envOf(nil), &bytes.Buffer{}, &bytes.Buffer{})
		assert.Equal(t, ExitBadConfig, ExitCode(err), "%v", err)
		assert.ErrorContains(t, err, path)
	}

	good, err := mysqldriver.ParseDSN(testsvc.MySQL(t))
	require.NoError(t, err)
	noDB, noUser := *good, *good
	noDB.DBName = "seckill_test_never_created_" + testsvc.RandomID(6)
	noUser.User = "seckill_no_such_user"
	for name, tc := range map[string]struct{ dsn, names string }{
		"unknown database": {noDB.FormatDSN(), noDB.DBName},
		"access denied":    {noUser.FormatDSN(), "seckill_no_such_user"},
	} {
		for _, cmd := range []string{"migrate", "verify"} {
			var logs bytes.Buffer
			err := Run(t.Context(), []string{cmd}, envOf(map[string]string{
				"SECKILL_MYSQL_DSN":             tc.dsn,
				"SECKILL_REDIS_ADDRS":           testsvc.Env(t, testsvc.EnvRedis),
				"SECKILL_MYSQL_CONNECT_TIMEOUT": "3s",
			}), &bytes.Buffer{}, &logs)
			require.Error(t, err, "%s: %s", name, cmd)
			assert.Equal(t, ExitBadConfig, ExitCode(err), "%s, %s: %v", name, cmd, err)
			assert.ErrorContains(t, err, tc.names, "%s: %s", name, cmd)
			assert.ErrorContains(t, err, "mysql.dsn (SECKILL_MYSQL_DSN)", "%s: %s", name, cmd)
			assert.NotContains(t, logs.String(), "waiting for", "%s, %s: not retried", name, cmd)
		}
	}
}

func get(t *testing.T, url string, want int) string {
	t.Helper()
	resp, err := checked(t).Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	require.Equal(t, want, resp.StatusCode, "%s: %s", url, b.String())
	return b.String()
}

// checked is a client whose every exchange is held to api/openapi.yaml.
func checked(t *testing.T) *http.Client {
	return &http.Client{Transport: apitest.Transport(t, nil)}
}

// onServices returns a runner of command lines against the test Redis and
// a fresh MySQL database, and that database.
func onServices(t *testing.T) (run func(args ...string) (string, error), db *sql.DB) {
	t.Helper()
	_, prefix := testsvc.Redis(t)
	dsn := testsvc.MySQL(t)
	env := envOf(map[string]string{
		"SECKILL_REDIS_ADDRS":      testsvc.Env(t, testsvc.EnvRedis),
		"SECKILL_REDIS_KEY_PREFIX": prefix,
		"SECKILL_MYSQL_DSN":        dsn,
	})
	db, err := sql.Open("mysql", dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return func(args ...string) (string, error) {
		var out bytes.Buffer
		err := Run(t.Context(), args, env, &out, &bytes.Buffer{})
		return out.String(), err
	}, db
}

func TestSeedVerifyAndQueue(t *testing.T) {
	run, db := onServices(t)
	dir := t.TempDir()
	yamlFile := dir + "/skus.yaml"
	require.NoError(t, os.WriteFile(yamlFile, []byte(`
- id: 11
  name: Phone
  price_cents: 99900
  stock: 10
  per_user_limit: 1
  starts_at: 2026-11-11T00:00:00Z
  ends_at: 2036-11-11T01:00:00Z
`), 0o600))
	csvFile := dir + "/skus.csv"
	require.NoError(t, os.WriteFile(csvFile, []byte("id,name,price_cents,stock,per_user_limit,starts_at,ends_at\n"+
		"12,Watch,19900,5,2,2026-11-11T00:00:00Z,2036-11-11T01:00:00Z\n"), 0o600))

	out, err := run("seed", "--file", yamlFile)
	require.NoError(t, err)
	assert.Contains(t, out, `"created":true`)
	out, err = run("seed", "--file", yamlFile)
	require.NoError(t, err)
	assert.Contains(t, out, `"created":false`, "re-seeding changes nothing")
	_, err = run("seed", "--file", csvFile)
	require.NoError(t, err)
	out, err = run("seed", "--name", "Flag", "--price-cents", "1", "--stock", "3", "--per-user-limit", "1",
		"--starts-at", "2026-11-11T00:00:00Z", "--ends-at", "2036-11-11T01:00:00Z")
	require.NoError(t, err)
	assert.Contains(t, out, `"stock_left":3`)

	out, err = run("verify")
	require.NoError(t, err, out)
	assert.Equal(t, 3, strings.Count(out, `"consistent":true`))

	out, err = run("queue", "stats", "--sku", "11")
	require.NoError(t, err)
	assert.Contains(t, out, `"dead": 0`)
	_, err = run("queue", "requeue", "--sku", "11", "nope")
	assert.Error(t, err)
	_, err = run("queue", "stats")
	assert.Equal(t, ExitBadConfig, ExitCode(err))

	// A violation makes verify exit 1.
	_, err = db.Exec("UPDATE skus SET sold = 1 WHERE id = 12")
	require.NoError(t, err)
	out, err = run("verify", "--sku", "12")
	require.Error(t, err)
	assert.Equal(t, ExitFailure, ExitCode(err))
	assert.Contains(t, out, `"consistent":false`)

	// A check that cannot run is its own exit code, never a violation; the
	// SKUs are still checked and reported.
	_, err = db.Exec("UPDATE skus SET sold = 0 WHERE id = 12")
	require.NoError(t, err)
	_, err = db.Exec("RENAME TABLE payments TO payments_away")
	require.NoError(t, err)
	out, err = run("verify")
	require.Error(t, err)
	assert.Equal(t, ExitUnchecked, ExitCode(err), "%v", err)
	assert.NotErrorIs(t, err, errViolation)
	assert.Equal(t, 3, strings.Count(out, `"consistent":true`))
	_, err = db.Exec("RENAME TABLE payments_away TO payments")
	require.NoError(t, err)

	bigID := dir + "/big.csv"
	require.NoError(t, os.WriteFile(bigID, []byte("id,name,price_cents,stock,per_user_limit,starts_at,ends_at\n"+
		"18446744073709551615,Big,1,5,2,2026-11-11T00:00:00Z,2036-11-11T01:00:00Z\n"), 0o600))
	for _, bad := range [][]string{
		{"seed", "--name", "x", "--price-cents", "1", "--stock", "-1"},
		{"seed", "--name", "x", "--stock", "1", "--starts-at", "tomorrow"},
		{"seed", "--file", dir + "/missing.yaml"},
		{"seed", "--id", "9223372036854775808", "--name", "x", "--price-cents", "1", "--stock", "1"},
		{"seed", "--file", bigID},
		{"queue", "stats", "--sku", "9223372036854775808"},
		{"verify", "--sku", "9223372036854775808"},
	} {
		_, err := run(bad...)
		assert.Equal(t, ExitBadConfig, ExitCode(err), "%v: %v", bad, err)
	}
	var skus int64
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM skus").Scan(&skus))
	assert.Equal(t, int64(3), skus, "the refused seeds wrote nothing")
}

// A SKU's buckets come from --buckets, a YAML key or an optional CSV column;
// left out, a new SKU gets 1 and a re-seed keeps the count, and a re-seed
// asking for another count fails naming both and writes nothing.
func TestSeedBuckets(t *testing.T) {
	run, db := onServices(t)
	buckets := func(id int) int {
		t.Helper()
		var n int
		require.NoError(t, db.QueryRow("SELECT buckets FROM skus WHERE id = ?", id).Scan(&n))
		return n
	}
	sku := func(extra ...string) []string {
		return append([]string{"seed", "--id", "21", "--name", "Hot", "--price-cents", "1", "--per-user-limit", "1",
			"--starts-at", "2026-11-11T00:00:00Z", "--ends-at", "2036-11-11T01:00:00Z"}, extra...)
	}

	out, err := run(sku("--stock", "8", "--buckets", "4")...)
	require.NoError(t, err)
	assert.Contains(t, out, `"created":true`)
	assert.Contains(t, out, `"buckets":4`)
	out, err = run(sku("--stock", "9")...)
	require.NoError(t, err, "a re-seed without --buckets keeps the count")
	assert.Contains(t, out, `"buckets":4`)
	assert.Equal(t, 4, buckets(21))

	_, err = run(sku("--stock", "5", "--buckets", "8")...)
	require.Error(t, err)
	assert.Equal(t, ExitFailure, ExitCode(err))
	assert.Contains(t, err.Error(), `sku 21 ("Hot"): a sku's stock buckets are fixed when it is created: sku 21 has 4, asked for 8`)
	var stock int64
	require.NoError(t, db.QueryRow("SELECT stock_total FROM skus WHERE id = 21").Scan(&stock))
	assert.Equal(t, int64(9), stock, "the refused seed wrote nothing")
	assert.Equal(t, 4, buckets(21))

	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
		return path
	}
	const window = "2026-11-11T00:00:00Z,2036-11-11T01:00:00Z"
	yamlSKU := func(id int, extra string) string {
		return fmt.Sprintf("- {id: %d, name: Y, price_cents: 1, stock: 3, per_user_limit: 1, starts_at: 2026-11-11T00:00:00Z, ends_at: 2036-11-11T01:00:00Z%s}\n", id, extra)
	}
	_, err = run("seed", "--file", write("b.yaml", yamlSKU(22, ", buckets: 16")+yamlSKU(23, "")))
	require.NoError(t, err)
	_, err = run("seed", "--file", write("b.csv", "id,name,price_cents,stock,per_user_limit,starts_at,ends_at,buckets\n"+
		"24,C,1,3,1,"+window+",2\n25,C,1,3,1,"+window+",\n"))
	require.NoError(t, err)
	_, err = run("seed", "--file", write("plain.csv", "id,name,price_cents,stock,per_user_limit,starts_at,ends_at\n26,C,1,3,1,"+window+"\n"))
	require.NoError(t, err, "a CSV file without the buckets column")
	_, err = run("seed", "--file", write("again.yaml", yamlSKU(22, "")))
	require.NoError(t, err, "a re-seed without the key keeps the count")
	for id, want := range map[int]int{22: 16, 23: 1, 24: 2, 25: 1, 26: 1} {
		assert.Equal(t, want, buckets(id), "sku %d", id)
	}

	for _, bad := range [][]string{
		sku("--stock", "1", "--buckets", "65"),
		sku("--stock", "1", "--buckets", "-1"),
		sku("--stock", "1", "--buckets", "two"),
		{"seed", "--file", write("flags.yaml", yamlSKU(27, "")), "--buckets", "2"},
		{"seed", "--file", write("big.yaml", yamlSKU(27, ", buckets: 65"))},
		{"seed", "--file", write("bad.csv", "id,name,price_cents,stock,per_user_limit,starts_at,ends_at,buckets\n27,C,1,3,1,"+window+",1.5\n")},
	} {
		_, err := run(bad...)
		assert.Equal(t, ExitBadConfig, ExitCode(err), "%v: %v", bad, err)
	}
	var skus int64
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM skus").Scan(&skus))
	assert.Equal(t, int64(6), skus, "the refused seeds wrote nothing")
	assert.Equal(t, 4, buckets(21))
}
