package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/cli"
	"github.com/seckill/seckill/internal/testsvc"
)

// baseURL is the URL of the seckill server the examples call
// (http://localhost:8080 for the quick start's), and adminToken its admin
// token.
var baseURL, adminToken = "", "example-admin-token-0123456789abcdef"

// TestMain runs the package's tests and examples with a seckill server in
// the process: `seckill serve` on the test services' Redis and MariaDB (a
// key prefix and a database of its own, removed afterwards) when
// SECKILL_TEST_REDIS_ADDR and SECKILL_TEST_MYSQL_DSN name them, as `make
// test` does, and on the embedded stores otherwise.
func TestMain(m *testing.M) {
	stop, err := serve()
	if err != nil {
		fmt.Fprintln(os.Stderr, "client examples:", err)
		os.Exit(1)
	}
	code := m.Run()
	if err := stop(); err != nil {
		fmt.Fprintln(os.Stderr, "client examples:", err)
		code = max(code, 1)
	}
	os.Exit(code)
}

func serve() (stop func() error, err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	_ = l.Close()
	env := []string{"SECKILL_HTTP_ADDR=" + addr, "SECKILL_ADMIN_TOKEN=" + adminToken, "SECKILL_LOG_LEVEL=warn"}
	var cleanups []func() error
	cleanup := func() error {
		var errs []error
		for i := len(cleanups) - 1; i >= 0; i-- {
			errs = append(errs, cleanups[i]())
		}
		return errors.Join(errs...)
	}
	if addrs, dsn := os.Getenv(testsvc.EnvRedis), os.Getenv(testsvc.EnvMySQL); addrs != "" && dsn != "" {
		db, drop, err := testsvc.Database(dsn)
		if err != nil {
			return nil, err
		}
		cleanups = append(cleanups, drop)
		prefix := "t:" + testsvc.RandomID(4) + ":"
		rdb := redis.NewClient(&redis.Options{Addr: addrs})
		cleanups = append(cleanups, func() error { return errors.Join(testsvc.DeleteKeys(rdb, prefix), rdb.Close()) })
		env = append(env, "SECKILL_REDIS_ADDRS="+addrs, "SECKILL_REDIS_KEY_PREFIX="+prefix, "SECKILL_MYSQL_DSN="+db,
			"SECKILL_AUTH_MODE=header", "SECKILL_PAYMENT_MODE=trusted")
	}

	ctx, cancel := context.WithCancel(context.Background())
	var log bytes.Buffer // written by the server until done
	done := make(chan error, 1)
	go func() { done <- cli.Run(ctx, []string{"serve"}, env, &bytes.Buffer{}, &log) }()
	stop = func() error {
		cancel()
		select {
		case err = <-done:
		case <-time.After(30 * time.Second):
			err = errors.New("the server did not stop within 30s")
		}
		return errors.Join(err, cleanup())
	}
	url := "http://" + addr
	for deadline := time.Now().Add(60 * time.Second); ; {
		if resp, err := http.Get(url + "/readyz"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				baseURL = url
				return stop, nil
			}
		}
		select {
		case err := <-done:
			return nil, errors.Join(fmt.Errorf("the server exited: %w\n%s", err, log.String()), cleanup())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, errors.Join(errors.New("the server was not ready within 60s"), stop())
		}
	}
}

// TestExamplesRunOnTheTestServices: under `make test` the examples' server
// is the one of the real stores, not the embedded one.
func TestExamplesRunOnTheTestServices(t *testing.T) {
	embedded := os.Getenv(testsvc.EnvRedis) == "" || os.Getenv(testsvc.EnvMySQL) == ""
	resp, err := http.Get(baseURL + "/healthz")
	require.NoError(t, err)
	defer resp.Body.Close()
	var health struct{ Embedded bool }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&health))
	assert.Equal(t, embedded, health.Embedded)
}
