package httpapi_test

// Tests of the API as `seckill serve` wires it from the configuration, on
// real Redis and MySQL: the rate limits it turns on by default, and what it
// writes to its log.

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/apitest"
	"github.com/seckill/seckill/internal/auth"
	"github.com/seckill/seckill/internal/cli"
	"github.com/seckill/seckill/internal/config"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testutil"
)

// environ turns vars into os.Environ's form.
func environ(vars map[string]string) []string {
	var env []string
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	return env
}

// server is `seckill serve` running until stop is called or the test ends.
type server struct {
	base string
	logs *testutil.SyncBuffer
	stop func()
}

// serve runs `seckill serve` on real Redis and MySQL with env over the
// defaults.
func serve(t *testing.T, env map[string]string) *server {
	t.Helper()
	_, prefix := testsvc.Redis(t)
	vars := map[string]string{
		"SECKILL_REDIS_ADDRS":           testsvc.Env(t, testsvc.EnvRedis),
		"SECKILL_REDIS_KEY_PREFIX":      prefix,
		"SECKILL_MYSQL_DSN":             testsvc.MySQL(t),
		"SECKILL_ADMIN_TOKEN":           "test-admin-token-0123456789abcdef",
		"SECKILL_AUTH_MODE":             "header",
		"SECKILL_PAYMENT_MODE":          "trusted",
		"SECKILL_HTTP_ADDR":             fmt.Sprintf("127.0.0.1:%d", testsvc.FreePort(t)),
		"SECKILL_MYSQL_CONNECT_TIMEOUT": "5s",
		"SECKILL_REDIS_CONNECT_TIMEOUT": "5s",
	}
	for k, v := range env {
		vars[k] = v
	}
	s := &server{base: "http://" + vars["SECKILL_HTTP_ADDR"], logs: &testutil.SyncBuffer{}}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- cli.Run(ctx, []string{"serve"}, environ(vars), &bytes.Buffer{}, s.logs)
	}()
	var once sync.Once
	s.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				assert.NoError(t, err)
			case <-time.After(30 * time.Second):
				t.Error("serve did not stop within 30s")
			}
		})
	}
	t.Cleanup(s.stop)
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := checked(t).Get(s.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		select {
		case err := <-done:
			t.Fatalf("serve exited: %v\n%s", err, s.logs)
		default:
		}
		require.True(t, time.Now().Before(deadline), "serve not ready: %v\n%s", err, s.logs)
		time.Sleep(50 * time.Millisecond)
	}
}

// checked is a client whose every exchange is held to api/openapi.yaml.
func checked(t *testing.T) *http.Client {
	return &http.Client{Transport: apitest.Transport(t, nil)}
}

// do sends a request with headers and returns the status.
func (s *server) do(t *testing.T, method, path, body string, headers map[string]string) int {
	t.Helper()
	req, err := http.NewRequest(method, s.base+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := checked(t).Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

// seed creates SKU 1 in stock (1,000 units, at most 1,000 per shopper,
// on sale now) through the admin API.
func (s *server) seed(t *testing.T) {
	t.Helper()
	require.Equal(t, http.StatusCreated, s.do(t, "POST", "/admin/skus", `{"id":1,"name":"Phone","price_cents":100,"stock":1000,"per_user_limit":1000,`+
		`"starts_at":"2020-01-01T00:00:00Z","ends_at":"2100-01-01T00:00:00Z"}`, map[string]string{"Authorization": "Bearer test-admin-token-0123456789abcdef"}))
}

// buys sends n buy requests of SKU 1 as user at once and returns how many
// were answered 429; every other answer must be 202.
func (s *server) buys(t *testing.T, user string, n int) (limited int) {
	t.Helper()
	statuses := make([]int, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			req, err := http.NewRequest("POST", s.base+"/api/v1/orders", strings.NewReader(`{"sku_id":1,"qty":1}`))
			if err != nil {
				errs[i] = err
				return
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-User-ID", user)
			resp, err := checked(t).Do(req)
			if err != nil {
				errs[i] = err
				return
			}
			resp.Body.Close()
			statuses[i] = resp.StatusCode
		})
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i])
		if statuses[i] == http.StatusTooManyRequests {
			limited++
			continue
		}
		require.Equal(t, http.StatusAccepted, statuses[i])
	}
	return limited
}

func TestServeLimitsEachShopperByDefault(t *testing.T) {
	s := serve(t, nil)
	s.seed(t)
	// Burst 40 at 20/s: of 100 requests sent at once, at most the burst and
	// what the rate refilled meanwhile pass.
	start := time.Now()
	limited := s.buys(t, "alice", 100)
	refilled := int(20 * time.Since(start).Seconds())
	assert.GreaterOrEqual(t, limited, 100-40-refilled-1, "too few of 100 requests were rate limited")
	assert.LessOrEqual(t, limited, 60, "the burst of 40 is granted")
	// Per-IP limiting is off: other shoppers from the same address buy.
	for i := range 50 {
		require.Zero(t, s.buys(t, fmt.Sprintf("user-%d", i), 1), "user-%d limited", i)
	}
}

func TestServeRateLimitDisabled(t *testing.T) {
	s := serve(t, map[string]string{
		"SECKILL_RATE_LIMIT_ENABLED":      "false",
		"SECKILL_RATE_LIMIT_PER_USER":     "1",
		"SECKILL_RATE_LIMIT_PER_IP":       "1",
		"SECKILL_RATE_LIMIT_PER_IP_BURST": "1",
	})
	s.seed(t)
	assert.Zero(t, s.buys(t, "alice", 100), "enabled=false turns every limit off")
}

// mysqlUserWithPassword creates a MySQL user with a password, allowed on
// database db only, and drops it when the test ends.
func mysqlUserWithPassword(t *testing.T, dsn string) (string, string) {
	t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	db := cfg.DBName
	root, err := sql.Open("mysql", testsvc.DSNWithoutDB(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = root.Close() })
	user, password := "sk_"+testsvc.RandomID(4), "pw-"+testsvc.RandomID(12)
	for _, q := range []string{
		"CREATE USER '" + user + "'@'%' IDENTIFIED BY '" + password + "'",
		"CREATE USER '" + user + "'@'localhost' IDENTIFIED BY '" + password + "'",
		"GRANT ALL ON `" + db + "`.* TO '" + user + "'@'%'",
		"GRANT ALL ON `" + db + "`.* TO '" + user + "'@'localhost'",
	} {
		_, err := root.Exec(q)
		require.NoError(t, err, q)
	}
	t.Cleanup(func() {
		_, _ = root.Exec("DROP USER IF EXISTS '" + user + "'@'%'")
		_, _ = root.Exec("DROP USER IF EXISTS '" + user + "'@'localhost'")
	})
	cfg.User, cfg.Passwd = user, password
	return cfg.FormatDSN(), password
}

// TestLogsHoldNoSecrets runs the server at debug level with a MySQL password,
// an admin token and a JWT secret, sends requests carrying them, and
// checks that none of them is in the log. (Only embedded mode logs a token:
// the one it generates, so that the admin API can be used at all.)
func TestLogsHoldNoSecrets(t *testing.T) {
	dsn, password := mysqlUserWithPassword(t, testsvc.MySQL(t))
	const adminToken = "admin-token-5f0c2e8d9a1b7c3e6f0a2d4b"
	const userSecret = "user-secret-7d3a9c1e4b5a6f708192a3b4"
	s := serve(t, map[string]string{
		"SECKILL_MYSQL_DSN":       dsn,
		"SECKILL_ADMIN_TOKEN":     adminToken,
		"SECKILL_AUTH_MODE":       "jwt",
		"SECKILL_AUTH_JWT_SECRET": userSecret,
		"SECKILL_LOG_LEVEL":       "debug",
	})
	minted, err := auth.Mint(config.Auth{JWTSecret: userSecret, JWTUserClaim: "sub"}, "alice", time.Hour, time.Now())
	require.NoError(t, err)
	userToken := "Bearer " + minted
	wrongAdmin := "Bearer admin-token-guess-0000000000000000"

	assert.Equal(t, http.StatusCreated, s.do(t, "POST", "/admin/skus", `{"id":1,"name":"Phone","price_cents":100,"stock":5,"per_user_limit":1,`+
		`"starts_at":"2020-01-01T00:00:00Z","ends_at":"2100-01-01T00:00:00Z"}`, map[string]string{"Authorization": "Bearer " + adminToken}))
	assert.Equal(t, http.StatusUnauthorized, s.do(t, "GET", "/admin/skus/1/audit", "", map[string]string{"Authorization": wrongAdmin}))
	assert.Equal(t, http.StatusAccepted, s.do(t, "POST", "/api/v1/orders", `{"sku_id":1,"qty":1}`, map[string]string{"Authorization": userToken}))
	assert.Equal(t, http.StatusUnauthorized, s.do(t, "POST", "/api/v1/orders", `{"sku_id":1,"qty":1}`, map[string]string{"Authorization": userToken + "0"}))
	s.stop()

	logs := s.logs.String()
	require.Contains(t, logs, `"msg":"http"`, "the access log was captured")
	require.Contains(t, logs, `"status":202`)
	for name, secret := range map[string]string{
		"mysql password": password, "mysql dsn": dsn, "admin token": adminToken, "wrong admin token": wrongAdmin,
		"user token": minted, "user token signature": minted[strings.LastIndexByte(minted, '.')+1:], "user token secret": userSecret,
	} {
		assert.NotContains(t, logs, secret, "%s in the log", name)
	}
}

// TestUnreachableMySQLHidesPassword: the retries logged while MySQL cannot be
// reached, and the error at the end, name the address but not the password.
func TestUnreachableMySQLHidesPassword(t *testing.T) {
	const password = "pw-unreachable-3e8f1a"
	logs := &testutil.SyncBuffer{}
	dsn := fmt.Sprintf("seckill:%s@tcp(127.0.0.1:%d)/seckill", password, testsvc.FreePort(t))
	err := cli.Run(t.Context(), []string{"migrate"}, environ(map[string]string{
		"SECKILL_MYSQL_DSN": dsn, "SECKILL_MYSQL_CONNECT_TIMEOUT": "1s", "SECKILL_LOG_LEVEL": "debug"}), &bytes.Buffer{}, logs)
	require.Error(t, err)
	require.Contains(t, logs.String(), "waiting for mysql", "the retries were logged")
	assert.NotContains(t, logs.String(), password)
	assert.NotContains(t, err.Error(), password)
}
