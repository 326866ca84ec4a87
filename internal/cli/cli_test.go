package cli

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/testsvc"
)

func envOf(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

func TestBadConfigExitsTwoNamingTheKey(t *testing.T) {
	var out, errOut bytes.Buffer
	err := Run(context.Background(), []string{"serve"}, envOf(map[string]string{"SECKILL_HTTP_ADDR": "not-an-addr"}), &out, &errOut)
	require.Error(t, err)
	assert.Equal(t, ExitBadConfig, ExitCode(err))
	assert.Contains(t, err.Error(), "http.addr")
}

func TestUsageErrorsExitTwo(t *testing.T) {
	for _, args := range [][]string{{"serve", "--nope"}, {"nope"}, {"serve", "--api-only", "--workers-only"}, {"version", "extra"}} {
		err := Run(context.Background(), args, envOf(nil), &bytes.Buffer{}, &bytes.Buffer{})
		require.Error(t, err, "%v", args)
		assert.Equal(t, ExitBadConfig, ExitCode(err), "%v: %v", args, err)
	}
}

func TestHelpHasExamples(t *testing.T) {
	for _, cmd := range []string{"serve", "worker", "migrate", "seed", "verify", "version"} {
		var out bytes.Buffer
		require.NoError(t, Run(context.Background(), []string{cmd, "--help"}, envOf(nil), &out, &out))
		assert.Contains(t, out.String(), "Examples:", cmd)
	}
}

func TestVersion(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, Run(context.Background(), []string{"version"}, envOf(nil), &out, &out))
	assert.True(t, strings.HasPrefix(out.String(), "seckill "))
}

// serve runs `seckill serve` with env until the test ends and returns its base URL.
func serve(t *testing.T, env map[string]string) string {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", testsvc.FreePort(t))
	env["SECKILL_HTTP_ADDR"] = addr
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var logs bytes.Buffer
	go func() { done <- Run(ctx, []string{"serve"}, envOf(env), &bytes.Buffer{}, &syncWriter{w: &logs}) }()
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
		resp, err := http.Get(base + "/healthz")
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
		"SECKILL_REDIS_ADDRS": testsvc.Env(t, testsvc.EnvRedis),
		"SECKILL_MYSQL_DSN":   testsvc.MySQL(t),
		"SECKILL_ADMIN_TOKEN": "test-admin-token-0123456789",
	})
	body := get(t, base+"/healthz", http.StatusOK)
	assert.Contains(t, body, `"embedded":false`)
	get(t, base+"/readyz", http.StatusOK)
}

func TestUnreachableMySQLFailsClearly(t *testing.T) {
	err := Run(context.Background(), []string{"migrate"}, envOf(map[string]string{
		"SECKILL_MYSQL_DSN":             fmt.Sprintf("root@tcp(127.0.0.1:%d)/x", testsvc.FreePort(t)),
		"SECKILL_MYSQL_CONNECT_TIMEOUT": "300ms",
	}), &bytes.Buffer{}, &bytes.Buffer{})
	require.Error(t, err)
	assert.Equal(t, ExitFailure, ExitCode(err))
	assert.Contains(t, err.Error(), "unreachable")
}

func get(t *testing.T, url string, want int) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	require.Equal(t, want, resp.StatusCode, "%s: %s", url, b.String())
	return b.String()
}
