package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/testsvc"
)

// signalWriter keeps what is written and closes seen once it holds want.
type signalWriter struct {
	mu     sync.Mutex
	b      strings.Builder
	want   string
	seen   chan struct{}
	closed bool
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	if w.seen != nil && !w.closed && strings.Contains(w.b.String(), w.want) {
		close(w.seen)
		w.closed = true
	}
	return len(p), nil
}

func (w *signalWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// Each command sets up only what it uses and warns only of what concerns
// it: migrate opens the SQL store alone (no in-process Redis, no admin
// token); seed, verify, queue and worker sign no waiting room pass, so
// room.pass_keys is none of their business; only serve, which serves the
// admin API, makes up an admin token, and only it warns of the pass keys.
func TestCommandsSetUpAndWarnOfOnlyWhatTheyUse(t *testing.T) {
	dsn := testsvc.MySQL(t)
	_, prefix := testsvc.Redis(t)
	stores := map[string]string{
		"SECKILL_REDIS_ADDRS":      testsvc.Env(t, testsvc.EnvRedis),
		"SECKILL_REDIS_KEY_PREFIX": prefix,
		"SECKILL_MYSQL_DSN":        dsn,
	}
	run := func(env map[string]string, args ...string) string {
		t.Helper()
		var out bytes.Buffer
		logs := &signalWriter{}
		require.NoError(t, Run(t.Context(), args, envOf(env), &out, logs), "%v: %s", args, logs)
		return logs.String()
	}

	logs := run(map[string]string{"SECKILL_MYSQL_DSN": dsn}, "migrate")
	for _, unrelated := range []string{"Redis", "redis", "admin_token", "room.pass_keys", "EMBEDDED MODE"} {
		assert.NotContains(t, logs, unrelated, "migrate with a MySQL DSN alone")
	}

	seed := []string{"seed", "--id", "5", "--name", "Phone", "--price-cents", "1", "--stock", "3", "--per-user-limit", "1",
		"--starts-at", "2026-11-11T00:00:00Z", "--ends-at", "2026-11-11T01:00:00Z"}
	for _, args := range [][]string{seed, {"verify"}, {"queue", "stats", "--sku", "5"}, {"queue", "dead", "--sku", "5"}} {
		logs := run(stores, args...)
		assert.NotContains(t, logs, "room.pass_keys", "%v", args)
		assert.NotContains(t, logs, "admin_token", "%v", args)
	}
	// A SQLite file with a real Redis is embedded mode for SQL: still no
	// admin API, so no token.
	sqlite := map[string]string{
		"SECKILL_REDIS_ADDRS":          stores["SECKILL_REDIS_ADDRS"],
		"SECKILL_REDIS_KEY_PREFIX":     prefix,
		"SECKILL_EMBEDDED_SQLITE_PATH": filepath.Join(t.TempDir(), "seckill.db"),
	}
	for _, args := range [][]string{seed, {"verify"}} {
		logs := run(sqlite, args...)
		assert.NotContains(t, logs, "admin_token", "%v", args)
		assert.NotContains(t, logs, "room.pass_keys", "%v", args)
	}

	// worker runs until stopped: stopped once it has started.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	worker := &signalWriter{want: "workers started", seen: make(chan struct{})}
	done := make(chan error, 1)
	go func() { done <- Run(ctx, []string{"worker"}, envOf(stores), &bytes.Buffer{}, worker) }()
	select {
	case <-worker.seen:
	case err := <-done:
		t.Fatalf("worker exited: %v\n%s", err, worker)
	case <-time.After(time.Minute):
		t.Fatalf("worker did not start:\n%s", worker)
	}
	cancel()
	require.NoError(t, <-done)
	assert.NotContains(t, worker.String(), "room.pass_keys", "worker")
	assert.NotContains(t, worker.String(), "admin_token", "worker")

	serve := map[string]string{"SECKILL_AUTH_MODE": "header", "SECKILL_PAYMENT_MODE": "trusted"}
	for k, v := range stores {
		serve[k] = v
	}
	assert.Contains(t, serveLogs(t, serve).String(), "room.pass_keys is not set", "serve signs the passes")
}
