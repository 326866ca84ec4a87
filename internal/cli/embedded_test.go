package cli

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testutil"
)

// The commands that act on a server's data refuse to run on a store that
// exists only in their own process: they would report on data nobody else
// sees. Each says how to reach the real stores, or the admin API call that
// does the same on the running server, and writes nothing to stdout.
func TestDataCommandsRefuseStoresOnlyTheyWouldSee(t *testing.T) {
	seed := []string{"seed", "--id", "1", "--name", "Phone X", "--price-cents", "99900", "--stock", "10", "--per-user-limit", "1",
		"--starts-at", "2026-11-11T00:00:00Z", "--ends-at", "2026-11-11T01:00:00Z"}
	commands := map[string]struct {
		args []string
		api  string // the admin API call named instead
	}{
		"seed":          {seed, "curl -s 127.0.0.1:8080/admin/skus"},
		"verify":        {[]string{"verify"}, "127.0.0.1:8080/admin/skus/ID/audit"},
		"verify --sku":  {[]string{"verify", "--sku", "42"}, "127.0.0.1:8080/admin/skus/42/audit"},
		"queue stats":   {[]string{"queue", "stats", "--sku", "42"}, "127.0.0.1:8080/admin/skus/42/queue?n=10"},
		"queue dead":    {[]string{"queue", "dead", "--sku", "42"}, "127.0.0.1:8080/admin/skus/42/dead?offset=0&n=100"},
		"queue requeue": {[]string{"queue", "requeue", "--sku", "42", "42-x"}, "-X POST 127.0.0.1:8080/admin/skus/42/dead/42-x/requeue"},
		"queue drop":    {[]string{"queue", "drop", "--sku", "42", "42-x"}, "-X DELETE 127.0.0.1:8080/admin/skus/42/dead/42-x"},
		"worker":        {[]string{"worker"}, "serve runs its own workers"},
		"migrate":       {[]string{"migrate"}, "serve applies the migrations"},
	}
	for name, c := range commands {
		var out, errOut bytes.Buffer
		err := Run(t.Context(), c.args, envOf(nil), &out, &errOut)
		require.Error(t, err, name)
		assert.Equal(t, ExitBadConfig, ExitCode(err), "%s: %v", name, err)
		assert.ErrorIs(t, err, errPrivateStore, name)
		assert.Empty(t, out.String(), "%s reported nothing", name)
		msg := err.Error()
		assert.Contains(t, msg, c.api, name)
		if name != "migrate" {
			assert.Contains(t, msg, "SECKILL_REDIS_ADDRS", name)
		}
		assert.Contains(t, msg, "SECKILL_MYSQL_DSN", name)
		assert.NotContains(t, errOut.String(), "EMBEDDED MODE", "%s started no embedded store", name)
	}

	// The server's address in the curl form is http.addr's.
	err := Run(t.Context(), []string{"verify", "--sku", "7"}, envOf(map[string]string{"SECKILL_HTTP_ADDR": "127.0.0.1:9000"}), &bytes.Buffer{}, &bytes.Buffer{})
	assert.ErrorContains(t, err, "curl -s 127.0.0.1:9000/admin/skus/7/audit")

	// One store in memory is enough to refuse: an in-process Redis with a
	// SQLite file, or a real Redis with an in-memory SQLite.
	redisAddr := testsvc.Env(t, testsvc.EnvRedis)
	file := filepath.Join(t.TempDir(), "seckill.db")
	for name, env := range map[string]map[string]string{
		"in-process redis": {"SECKILL_EMBEDDED_SQLITE_PATH": file},
		"in-memory sqlite": {"SECKILL_REDIS_ADDRS": redisAddr, "SECKILL_REDIS_KEY_PREFIX": testsvc.Prefix(t)},
	} {
		var out bytes.Buffer
		err := Run(t.Context(), seed, envOf(env), &out, &bytes.Buffer{})
		assert.ErrorIs(t, err, errPrivateStore, name)
		assert.Equal(t, ExitBadConfig, ExitCode(err), name)
		assert.Empty(t, out.String(), name)
	}
	// migrate needs no Redis: a SQLite file is migrated.
	var out bytes.Buffer
	require.NoError(t, Run(t.Context(), []string{"migrate"}, envOf(map[string]string{"SECKILL_EMBEDDED_SQLITE_PATH": file}), &out, &bytes.Buffer{}))
	assert.Contains(t, out.String(), "migrations up to date (sqlite)")
}

// A SQLite file (embedded.sqlite_path) with a real Redis is a store other
// processes on the host share: what seed writes there, verify finds.
func TestDataCommandsShareASQLiteFile(t *testing.T) {
	_, prefix := testsvc.Redis(t)
	env := envOf(map[string]string{
		"SECKILL_REDIS_ADDRS":          testsvc.Env(t, testsvc.EnvRedis),
		"SECKILL_REDIS_KEY_PREFIX":     prefix,
		"SECKILL_EMBEDDED_SQLITE_PATH": filepath.Join(t.TempDir(), "seckill.db"),
	})
	var out, errOut bytes.Buffer
	require.NoError(t, Run(t.Context(), []string{"seed", "--id", "5", "--name", "Shared", "--price-cents", "1", "--stock", "3",
		"--per-user-limit", "1", "--starts-at", "2026-11-11T00:00:00Z", "--ends-at", "2026-11-11T01:00:00Z"}, env, &out, &errOut))
	assert.Contains(t, out.String(), `"created":true`)
	out.Reset()
	require.NoError(t, Run(t.Context(), []string{"verify"}, env, &out, &errOut))
	assert.Equal(t, 1, strings.Count(out.String(), `"consistent":true`), out.String())
	assert.Contains(t, out.String(), `"sku_id":5`)
}

// serveLogs runs `seckill serve` with env until the test ends, waits for
// /healthz and returns its log.
func serveLogs(t *testing.T, env map[string]string) *testutil.SyncBuffer {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", testsvc.FreePort(t))
	env["SECKILL_HTTP_ADDR"] = addr
	logs := &testutil.SyncBuffer{}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, []string{"serve"}, envOf(env), &bytes.Buffer{}, logs) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop within 30s of cancellation")
		}
	})
	testutil.Eventually(t, 20*time.Second, "serve answers /healthz", func() bool {
		select {
		case err := <-done:
			t.Fatalf("serve exited early: %v\n%s", err, logs)
		default:
		}
		return testutil.Healthy("http://" + addr)
	})
	return logs
}

// With a real Redis or MySQL and no admin.token, serve says at start that
// the admin API is off, naming the key and its variable; with a token, or in
// embedded mode (which generates one), it does not.
func TestServeWarnsWhenTheAdminAPIIsOff(t *testing.T) {
	_, prefix := testsvc.Redis(t)
	external := func(extra map[string]string) map[string]string {
		env := map[string]string{
			"SECKILL_REDIS_ADDRS":      testsvc.Env(t, testsvc.EnvRedis),
			"SECKILL_REDIS_KEY_PREFIX": prefix,
			"SECKILL_MYSQL_DSN":        testsvc.MySQL(t),
			"SECKILL_AUTH_MODE":        "header",
			"SECKILL_PAYMENT_MODE":     "trusted",
		}
		for k, v := range extra {
			env[k] = v
		}
		return env
	}
	const warning = `"level":"WARN","msg":"admin API off: admin.token (SECKILL_ADMIN_TOKEN) is empty, so every /admin call answers 403 admin_disabled"`

	logs := serveLogs(t, external(nil))
	assert.Contains(t, logs.String(), warning)
	assert.Contains(t, logs.String(), `"key":"admin.token","env":"SECKILL_ADMIN_TOKEN"`)

	logs = serveLogs(t, external(map[string]string{"SECKILL_ADMIN_TOKEN": "test-admin-token-0123456789abcdef"}))
	assert.NotContains(t, logs.String(), "admin API off")
	logs = serveLogs(t, map[string]string{})
	assert.NotContains(t, logs.String(), "admin API off")
	assert.Contains(t, logs.String(), "EMBEDDED MODE")
}

// An embedded server says at start where it listens: on this host only
// unless http.addr says otherwise, and beyond it, what that exposes (the
// quick start identifies shoppers by a header and trusts their payments).
func TestEmbeddedServeSaysWhereItListens(t *testing.T) {
	logs := serveLogs(t, map[string]string{})
	assert.Contains(t, logs.String(), `"msg":"EMBEDDED MODE: listening on this host only; set http.addr (SECKILL_HTTP_ADDR), e.g. :8080, to serve other hosts"`)

	port := testsvc.FreePort(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	wide := &signalWriter{want: "http listening", seen: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, []string{"serve"}, envOf(map[string]string{"SECKILL_HTTP_ADDR": fmt.Sprintf(":%d", port)}), &bytes.Buffer{}, wide)
	}()
	select {
	case <-wide.seen:
	case err := <-done:
		t.Fatalf("serve exited: %v\n%s", err, wide)
	case <-time.After(time.Minute):
		t.Fatalf("serve did not listen:\n%s", wide)
	}
	cancel()
	require.NoError(t, <-done)
	assert.Contains(t, wide.String(), `"msg":"EMBEDDED MODE: listening beyond this host, as http.addr says: whoever reaches it can act as any shopper (X-User-ID) and mark orders paid without paying (payment.mode trusted)"`)
}
