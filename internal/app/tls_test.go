package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/config"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testutil"
)

// A sale runs over TLS on each TLS deployment — standalone, Cluster and
// Sentinel (to the Sentinels and to the primary) — configured by the example
// file of docs/operate/deploy.md, whose addresses and certificate files the
// environment replaces. Every one of these servers refuses plain connections.
func TestSaleOverTLS(t *testing.T) {
	file := filepath.Join(t.TempDir(), "seckill.yaml")
	require.NoError(t, os.WriteFile(file, testutil.DocExample(t, "docs/operate/deploy.md", "tls-example"), 0o600))
	for _, kind := range testsvc.TLSDeployments {
		t.Run(kind, func(t *testing.T) {
			s := startSale(t, saleOpts{tls: kind, config: file})
			require.True(t, s.apps[0].Cfg.Redis.TLS.Enabled)

			sku := s.seed(2, 1)
			alice := s.order(0, sku, "alice")
			s.order(0, sku, "bob")
			assert.Equal(t, "sold_out", s.buy(0, sku, "carol", 1).Str("error"))
			s.waitStatus("alice", alice, "pending_payment")
			rep := s.drained(sku)
			assert.Equal(t, int64(2), rep.Sold)

			// Readiness pings every primary: each Cluster master over TLS.
			ready := s.do(0, "GET", "/readyz", "", nil)
			assert.Equal(t, http.StatusOK, ready.Status, ready.Raw)
		})
	}
}

// openTLSRedis opens the TLS deployment of kind the way the server does,
// with tlsCfg, and returns the client or the error.
func openTLSRedis(t *testing.T, addrs []string, master string, tlsCfg config.RedisTLS) (redis.UniversalClient, error) {
	t.Helper()
	rdb, closeRedis, err := openRedis(t.Context(), config.Redis{
		Addrs:          addrs,
		MasterName:     master,
		PoolSize:       4,
		DialTimeout:    2 * time.Second,
		ReadTimeout:    2 * time.Second,
		WriteTimeout:   2 * time.Second,
		ConnectTimeout: 30 * time.Second,
		TLS:            tlsCfg,
	}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err == nil {
		t.Cleanup(closeRedis)
	}
	return rdb, err
}

// A Cluster client that knows one node at first reaches the masters it
// learns of from the cluster over TLS as well.
func TestTLSClusterNodesLearnedLater(t *testing.T) {
	target := testsvc.RedisTLSTarget(t, testsvc.TLSCluster)
	testsvc.RedisTLS(t, testsvc.TLSCluster) // skips when it is not running
	seed := target.Addrs[0]
	// Two seed addresses make openRedis build a Cluster client.
	rdb, err := openTLSRedis(t, []string{seed, seed}, "", target.TLS)
	require.NoError(t, err)
	cc, ok := rdb.(*redis.ClusterClient)
	require.True(t, ok, "%T", rdb)
	var mu sync.Mutex
	var masters []string
	require.NoError(t, cc.ForEachMaster(t.Context(), func(ctx context.Context, m *redis.Client) error {
		if m.Options().TLSConfig == nil {
			return fmt.Errorf("master %s: no TLS", m.Options().Addr)
		}
		mu.Lock()
		masters = append(masters, m.Options().Addr)
		mu.Unlock()
		return m.Ping(ctx).Err()
	}))
	sort.Strings(masters)
	want := append([]string(nil), target.Addrs...)
	sort.Strings(want)
	assert.Equal(t, want, masters)
}

// A client that cannot verify the server, or that the server does not
// accept, fails at once with the reason, instead of waiting
// redis.connect_timeout for a server that is up.
func TestTLSRefusedFailsAtOnceWithTheReason(t *testing.T) {
	for _, kind := range testsvc.TLSDeployments {
		t.Run(kind, func(t *testing.T) {
			target := testsvc.RedisTLSTarget(t, kind)
			testsvc.RedisTLS(t, kind) // skips when it is not running

			noCA := target.TLS
			noCA.CAFile = ""
			_, err := openTLSRedis(t, target.Addrs, target.MasterName, noCA)
			require.Error(t, err)
			assert.ErrorContains(t, err, "redis: TLS handshake failed")
			assert.ErrorContains(t, err, "certificate signed by unknown authority")
			assert.ErrorContains(t, err, "check redis.tls")
			assert.NotContains(t, err.Error(), "unreachable after", "no waiting for a server that is up")

			otherName := target.TLS
			otherName.ServerName = "redis.other.test"
			_, err = openTLSRedis(t, target.Addrs, target.MasterName, otherName)
			assert.ErrorContains(t, err, "redis: TLS handshake failed")
			assert.ErrorContains(t, err, "not redis.other.test")

			if kind == testsvc.TLSStandalone {
				return // a client certificate is optional there
			}
			noCert := target.TLS
			noCert.CertFile, noCert.KeyFile = "", ""
			_, err = openTLSRedis(t, target.Addrs, target.MasterName, noCert)
			assert.ErrorContains(t, err, "redis: TLS handshake failed")
			assert.ErrorContains(t, err, "remote error: tls")
		})
	}
}

// Server-only TLS, as most managed Redis services offer it: the CA and no
// client certificate.
func TestTLSWithoutClientCertificate(t *testing.T) {
	target := testsvc.RedisTLSTarget(t, testsvc.TLSStandalone)
	testsvc.RedisTLS(t, testsvc.TLSStandalone) // skips when it is not running
	caOnly := target.TLS
	caOnly.CertFile, caOnly.KeyFile = "", ""
	rdb, err := openTLSRedis(t, target.Addrs, "", caOnly)
	require.NoError(t, err)
	require.NoError(t, rdb.Ping(t.Context()).Err())
}

// A client without TLS against a Redis that requires it is told that TLS
// may be why the server closed the connection.
func TestTLSOffAgainstATLSServer(t *testing.T) {
	target := testsvc.RedisTLSTarget(t, testsvc.TLSStandalone)
	testsvc.RedisTLS(t, testsvc.TLSStandalone) // skips when it is not running
	_, closeRedis, err := openRedis(t.Context(), config.Redis{
		Addrs: target.Addrs, DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
	}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err == nil {
		closeRedis()
	}
	require.Error(t, err)
	assert.ErrorContains(t, err, "see redis.tls.enabled")
}

// Verification can be turned off only through the Go API, which the
// configuration refuses to set: a test may reach a server whose CA it lacks.
func TestTLSInsecureSkipVerifyThroughTheGoAPI(t *testing.T) {
	target := testsvc.RedisTLSTarget(t, testsvc.TLSCluster)
	testsvc.RedisTLS(t, testsvc.TLSCluster)
	insecure := target.TLS
	insecure.CAFile, insecure.InsecureSkipVerify = "", true
	rdb, err := openTLSRedis(t, target.Addrs, "", insecure)
	require.NoError(t, err)
	require.NoError(t, rdb.Ping(t.Context()).Err())

	env := map[string]string{
		"SECKILL_REDIS_ADDRS":                    strings.Join(target.Addrs, ","),
		"SECKILL_REDIS_TLS_ENABLED":              "true",
		"SECKILL_REDIS_TLS_INSECURE_SKIP_VERIFY": "true",
	}
	_, err = config.Load("", func(k string) string { return env[k] })
	var ce *config.Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "redis.tls.insecure_skip_verify", ce.Key)
}
