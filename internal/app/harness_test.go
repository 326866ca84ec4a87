package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/api/client"
	"github.com/seckill/seckill/internal/apitest"
	"github.com/seckill/seckill/internal/config"
	"github.com/seckill/seckill/internal/sale"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testutil"
)

const adminToken = "test-admin-token-0123456789abcdef"

// deployment is a running seckill under test: instances sharing one Redis
// (standalone or Cluster) and one SQL database.
type deployment struct {
	t       *testing.T
	urls    []string
	apps    []*App
	client  *http.Client
	env     map[string]string
	config  string // the config file under env; "" for none
	workers bool
	log     io.Writer
	// token, when set, identifies shoppers by the bearer token it returns for
	// a user instead of X-User-ID (jwt mode).
	token func(user string) string
	// api has a client generated from api/openapi.yaml per instance.
	api []*client.ClientWithResponses
}

type saleOpts struct {
	instances int
	cluster   bool   // Redis Cluster instead of standalone
	sentinel  bool   // the shared Sentinel set's master instead of standalone
	tls       string // a TLS deployment of testsvc (TLSStandalone, TLSCluster, TLSSentinel) instead
	config    string // a config file, which env overrides
	embedded  bool   // no Redis or MySQL configured
	noWorkers bool   // API only: accepted orders stay queued
	env       map[string]string
	log       io.Writer // the instances' log at info level; default stderr at warn
}

// startSale starts instances of the full server (API and workers) and stops
// them when the test ends.
func startSale(t *testing.T, o saleOpts) *deployment {
	t.Helper()
	if o.instances == 0 {
		o.instances = 1
	}
	env := map[string]string{
		"SECKILL_ADMIN_TOKEN":           adminToken,
		"SECKILL_AUTH_MODE":             "header",
		"SECKILL_PAYMENT_MODE":          "trusted",
		"SECKILL_RATE_LIMIT_ENABLED":    "false",
		"SECKILL_LOG_LEVEL":             "warn",
		"SECKILL_WORKER_SKU_REFRESH":    "100ms",
		"SECKILL_WORKER_SWEEP_INTERVAL": "500ms",
		"SECKILL_WORKER_LEASE":          "5s",
		"SECKILL_MYSQL_CONNECT_TIMEOUT": "5s",
		"SECKILL_REDIS_CONNECT_TIMEOUT": "5s",
	}
	if !o.embedded {
		switch {
		case o.tls != "":
			_, prefix := testsvc.RedisTLS(t, o.tls)
			target := testsvc.RedisTLSTarget(t, o.tls)
			env["SECKILL_REDIS_ADDRS"] = strings.Join(target.Addrs, ",")
			env["SECKILL_REDIS_MASTER_NAME"] = target.MasterName
			env["SECKILL_REDIS_KEY_PREFIX"] = prefix
			env["SECKILL_REDIS_TLS_ENABLED"] = "true"
			env["SECKILL_REDIS_TLS_CA_FILE"] = target.TLS.CAFile
			env["SECKILL_REDIS_TLS_CERT_FILE"] = target.TLS.CertFile
			env["SECKILL_REDIS_TLS_KEY_FILE"] = target.TLS.KeyFile
		case o.sentinel:
			_, prefix := testsvc.Sentinel(t)
			addrs, master := testsvc.SentinelAddrs(t)
			env["SECKILL_REDIS_ADDRS"] = strings.Join(addrs, ",")
			env["SECKILL_REDIS_MASTER_NAME"] = master
			env["SECKILL_REDIS_KEY_PREFIX"] = prefix
		case o.cluster:
			_, prefix := testsvc.Universal(t, true)
			env["SECKILL_REDIS_ADDRS"] = testsvc.Env(t, testsvc.EnvRedisCluster)
			env["SECKILL_REDIS_KEY_PREFIX"] = prefix
		default:
			_, prefix := testsvc.Universal(t, false)
			env["SECKILL_REDIS_ADDRS"] = testsvc.Env(t, testsvc.EnvRedis)
			env["SECKILL_REDIS_KEY_PREFIX"] = prefix
		}
		env["SECKILL_MYSQL_DSN"] = testsvc.ServerMySQL(t)
	}
	for k, v := range o.env {
		env[k] = v
	}
	// Every exchange is held to api/openapi.yaml.
	s := &deployment{t: t, env: env, config: o.config, workers: !o.noWorkers, log: o.log, client: &http.Client{
		Timeout:   30 * time.Second,
		Transport: apitest.Transport(t, &http.Transport{MaxIdleConnsPerHost: 512, MaxConnsPerHost: 512}),
	}}
	for i := 0; i < o.instances; i++ {
		s.start()
	}
	t.Cleanup(s.client.CloseIdleConnections)
	return s
}

func (s *deployment) start() {
	t := s.t
	t.Helper()
	env := map[string]string{}
	for k, v := range s.env {
		env[k] = v
	}
	addr := fmt.Sprintf("127.0.0.1:%d", testsvc.FreePort(t))
	env["SECKILL_HTTP_ADDR"] = addr
	if _, ok := env["SECKILL_HTTP_WRITE_TIMEOUT"]; !ok {
		// A crowd of a test under the race detector on a loaded machine
		// may wait past the shipped 10s; cut off, it would read EOF.
		env["SECKILL_HTTP_WRITE_TIMEOUT"] = "60s"
	}
	cfg, err := config.Load(s.config, func(k string) string { return env[k] })
	require.NoError(t, err)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if s.log != nil {
		log = slog.New(slog.NewTextHandler(s.log, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	ctx, cancel := context.WithCancel(t.Context())
	a, err := Open(ctx, cfg, log, true)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, RunOptions{API: true, Workers: s.workers}) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("instance %s: %v", addr, err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("instance %s did not stop", addr)
		}
		a.Close()
	})
	url := "http://" + addr
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := s.client.Get(url + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		require.True(t, time.Now().Before(deadline), "instance %s did not come up: %v", addr, err)
		time.Sleep(20 * time.Millisecond)
	}
	s.urls = append(s.urls, url)
	s.apps = append(s.apps, a)
	c, err := client.NewClientWithResponses(url, client.WithHTTPClient(s.client))
	require.NoError(t, err)
	s.api = append(s.api, c)
}

// asAdmin and as identify a generated client's request as the admin or a
// shopper.
func asAdmin(_ context.Context, r *http.Request) error {
	r.Header.Set("Authorization", "Bearer "+adminToken)
	return nil
}

func (s *deployment) as(user string) client.RequestEditorFn {
	return func(_ context.Context, r *http.Request) error {
		if s.token != nil {
			r.Header.Set("Authorization", "Bearer "+s.token(user))
		} else {
			r.Header.Set("X-User-ID", user)
		}
		return nil
	}
}

// do sends a request to instance i (mod the number of instances); body is
// sent as testutil.Caller.Request says.
func (s *deployment) do(i int, method, path, user string, body any) testutil.Reply {
	s.t.Helper()
	r, err := s.caller().Do(s.urls[i%len(s.urls)], method, path, user, body)
	require.NoError(s.t, err)
	return r
}

func (s *deployment) caller() testutil.Caller {
	return testutil.Caller{HTTP: s.client, AdminToken: adminToken, UserToken: s.token}
}

// seed creates a SKU on sale now and returns its id.
func (s *deployment) seed(stock int64, limit int) uint64 {
	s.t.Helper()
	now := time.Now().UTC()
	return s.seedSpec(client.SKUSpec{Name: ptr("Phone"), PriceCents: ptr(int64(99900)), Stock: &stock, PerUserLimit: &limit,
		StartsAt: ptr(now.Add(-time.Minute)), EndsAt: ptr(now.Add(time.Hour))})
}

func (s *deployment) seedSpec(spec client.SKUSpec) uint64 {
	s.t.Helper()
	r, err := s.api[0].UpsertSKUWithResponse(context.Background(), spec, asAdmin)
	require.NoError(s.t, err)
	require.NotNil(s.t, r.JSON201, "%d %s", r.StatusCode(), r.Body)
	return uint64(r.JSON201.Id)
}

func ptr[T any](v T) *T { return &v }

// buy places an order of qty units of sku for user on instance i.
func (s *deployment) buy(i int, sku uint64, user string, qty int) testutil.Reply {
	s.t.Helper()
	r, err := s.api[i%len(s.api)].PlaceOrderWithResponse(context.Background(),
		client.PlaceOrderRequest{SkuId: int64(sku), Qty: qty}, s.as(user))
	require.NoError(s.t, err)
	return testutil.NewReply(r.HTTPResponse, r.Body)
}

// order buys one unit of sku as user on instance i, requires the buy
// accepted and returns the order's id.
func (s *deployment) order(i int, sku uint64, user string) string {
	s.t.Helper()
	r := s.buy(i, sku, user, 1)
	require.Equal(s.t, http.StatusAccepted, r.Status, r.Raw)
	return r.Str("order_id")
}

// buyRetrying buys as a real client does: with a request id, and after a
// 503 (busy or unavailable) or no answer at all again with the same id
// after a short pause, at most 50 times. It returns the last answer and how many 503s came first.
func (s *deployment) buyRetrying(i int, sku uint64, user string, qty int) (testutil.Reply, int) {
	s.t.Helper()
	id := fmt.Sprintf("%s-%d-%d", user, sku, qty)
	for try := 0; ; try++ {
		r, err := s.api[i%len(s.api)].PlaceOrderWithResponse(context.Background(),
			client.PlaceOrderRequest{SkuId: int64(sku), Qty: qty, RequestId: id}, s.as(user))
		if err != nil && try < 50 {
			// No answer (the connection dropped): the buy may have gone
			// through, and the same request id finds out.
			time.Sleep(time.Duration(20+i%30) * time.Millisecond)
			continue
		}
		require.NoError(s.t, err)
		rep := testutil.NewReply(r.HTTPResponse, r.Body)
		if rep.Status != http.StatusServiceUnavailable || rep.Header.Get("Retry-After") == "" || try == 50 {
			return rep, try
		}
		time.Sleep(time.Duration(20+i%30) * time.Millisecond)
	}
}

func (s *deployment) audit(sku uint64) sale.Report {
	s.t.Helper()
	r, err := s.api[0].AuditSKUWithResponse(context.Background(), int64(sku), asAdmin)
	require.NoError(s.t, err)
	require.Equal(s.t, http.StatusOK, r.StatusCode(), "%s", r.Body)
	var rep sale.Report
	require.NoError(s.t, json.Unmarshal(r.Body, &rep))
	return rep
}

// drained waits until no order of sku is queued and returns the audit.
func (s *deployment) drained(sku uint64) sale.Report {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		rep := s.audit(sku)
		if rep.QueuedOrders == 0 && rep.Consistent {
			return rep
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("sku %d not drained: %+v", sku, rep)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitStatus polls an order until it has status want.
func (s *deployment) waitStatus(user, orderID, want string) testutil.Reply {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := s.do(0, "GET", "/api/v1/orders/"+orderID, user, nil)
		if r.Status == http.StatusOK && r.Str("status") == want {
			return r
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("order %s never reached %s: %d %s", orderID, want, r.Status, r.Raw)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// onBackends runs f on a deployment over standalone Redis (o as given) and
// on one of three instances over the Redis Cluster.
func onBackends(t *testing.T, o saleOpts, f func(t *testing.T, s *deployment)) {
	t.Run("standalone", func(t *testing.T) { f(t, startSale(t, o)) })
	t.Run("cluster-3", func(t *testing.T) {
		o.cluster, o.instances = true, 3
		f(t, startSale(t, o))
	})
}
