package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/config"
	"github.com/seckill/seckill/internal/ratelimit"
	"github.com/seckill/seckill/internal/testsvc"
)

// buyFrom sends a buy request as user from the peer address remote with the
// given extra headers.
func buyFrom(h http.Handler, user, remote string, headers map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "http://seckill.test/api/v1/orders", strings.NewReader(`{"sku_id":1,"qty":1}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-User-ID", user)
	req.RemoteAddr = remote
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// assertLimited checks a 429 answer: code rate_limited and a Retry-After of
// whole seconds, at least 1.
func assertLimited(t *testing.T, w *httptest.ResponseRecorder) {
	t.Helper()
	require.Equal(t, http.StatusTooManyRequests, w.Code, w.Body.String())
	var body map[string]string
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body))
	assert.Equal(t, "rate_limited", body["error"])
	secs, err := strconv.Atoi(w.Header().Get("Retry-After"))
	require.NoError(t, err, "Retry-After %q", w.Header().Get("Retry-After"))
	assert.GreaterOrEqual(t, secs, 1)
}

func TestRateLimitDefaults(t *testing.T) {
	cfg, err := config.Load("", nil)
	require.NoError(t, err)
	rl := cfg.RateLimit
	assert.True(t, rl.Enabled, "rate limits are on by default")
	assert.Equal(t, 20, rl.PerUser)
	assert.Equal(t, 40, rl.PerUserBurst)
	assert.Zero(t, rl.PerIP, "per-IP limiting is off by default")
	assert.Empty(t, rl.TrustedProxies, "no proxy is trusted by default")
}

// TestPerUserLimitAfterBurst runs the default per-user budget (20/s, burst
// 40) on real Redis: a shopper gets the burst, then 429 rate_limited with
// Retry-After, while another shopper from the same address is unaffected.
func TestPerUserLimitAfterBurst(t *testing.T) {
	rdb, prefix := testsvc.Redis(t)
	cfg, err := config.Load("", nil)
	require.NoError(t, err)
	shop := &stubShop{}
	h := testAPI(t, func(d *Deps) {
		d.Shop = shop
		d.PerUser = ratelimit.New(rdb, prefix+"rl:", cfg.RateLimit.PerUser, cfg.RateLimit.PerUserBurst)
	})

	start := time.Now()
	allowed := 0
	var limited *httptest.ResponseRecorder
	for range 1000 {
		w := buyFrom(h, "alice", "192.0.2.1:1234", nil)
		if w.Code != http.StatusAccepted {
			limited = w
			break
		}
		allowed++
	}
	elapsed := time.Since(start)
	require.NotNil(t, limited, "alice was never limited")
	assertLimited(t, limited)
	// The burst is always granted; beyond it only what the rate refilled.
	assert.GreaterOrEqual(t, allowed, 40)
	assert.LessOrEqual(t, float64(allowed), 40+20*elapsed.Seconds()+1, "allowed %d in %s", allowed, elapsed)
	assert.Equal(t, int64(allowed), shop.placed.Load(), "a limited request never reaches the shop")

	assert.Equal(t, http.StatusAccepted, buyFrom(h, "bob", "192.0.2.1:1234", nil).Code, "another shopper has their own budget")
}

// TestPerIPOffByDefault: with the default configuration many shoppers behind
// one address are limited only per shopper.
func TestPerIPOffByDefault(t *testing.T) {
	rdb, prefix := testsvc.Redis(t)
	h := testAPI(t, func(d *Deps) {
		d.PerUser = ratelimit.New(rdb, prefix+"rl:", 20, 40)
	})
	for i := range 200 {
		w := buyFrom(h, fmt.Sprintf("user-%d", i), "192.0.2.1:1234", nil)
		require.Equal(t, http.StatusAccepted, w.Code, "request %d: %s", i, w.Body)
	}
}

// TestPerIPHonoursTrustedProxies: X-Forwarded-For (and X-Real-IP) is believed
// only from a trusted proxy. An untrusted peer is limited by its own address
// whatever it claims, and cannot spend another client's budget; behind a
// trusted proxy each forwarded client has its own budget and the proxy none.
func TestPerIPHonoursTrustedProxies(t *testing.T) {
	rdb, prefix := testsvc.Redis(t)
	h := testAPI(t, func(d *Deps) {
		d.PerIP = ratelimit.New(rdb, prefix+"rl:", 1, 5)
		d.TrustedProxies = []string{"10.0.0.0/8"}
	})
	n := 0
	user := func() string { n++; return fmt.Sprintf("user-%d", n) }

	// An untrusted peer rotating X-Forwarded-For is still one address.
	for i := range 5 {
		w := buyFrom(h, user(), "203.0.113.7:4000", map[string]string{
			"X-Forwarded-For": fmt.Sprintf("198.51.100.%d", i), "X-Real-IP": fmt.Sprintf("198.51.100.%d", 100+i)})
		require.Equal(t, http.StatusAccepted, w.Code, "request %d", i)
	}
	assertLimited(t, buyFrom(h, user(), "203.0.113.7:4001", map[string]string{"X-Forwarded-For": "198.51.100.250"}))

	// Those forged addresses were not charged: through the trusted proxy each
	// still has its whole burst.
	for i := range 5 {
		w := buyFrom(h, user(), "10.1.2.3:5000", map[string]string{"X-Forwarded-For": "198.51.100.0"})
		require.Equal(t, http.StatusAccepted, w.Code, "request %d via the proxy", i)
	}
	// From a trusted proxy the forwarded address is limited...
	assertLimited(t, buyFrom(h, user(), "10.1.2.3:5000", map[string]string{"X-Forwarded-For": "198.51.100.0"}))
	// ...the proxy itself is not, and neither are other clients behind it.
	w := buyFrom(h, user(), "10.1.2.3:5000", map[string]string{"X-Forwarded-For": "198.51.100.1"})
	assert.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	// A chain is read from the right: the last untrusted hop is the client,
	// whatever it prepended.
	for i := range 5 {
		w := buyFrom(h, user(), "10.1.2.3:5000", map[string]string{"X-Forwarded-For": fmt.Sprintf("192.0.2.%d, 198.51.100.2, 10.9.9.9", i)})
		require.Equal(t, http.StatusAccepted, w.Code, "chained request %d", i)
	}
	assertLimited(t, buyFrom(h, user(), "10.1.2.3:5000", map[string]string{"X-Forwarded-For": "192.0.2.77, 198.51.100.2"}))
}

// TestLimiterOutageLetsBuysThrough: a limiter that cannot reach Redis lets
// the request through; the sale does not stop because requests cannot be
// counted.
func TestLimiterOutageLetsBuysThrough(t *testing.T) {
	_, prefix := testsvc.Redis(t)
	own := redis.NewClient(&redis.Options{Addr: testsvc.Env(t, testsvc.EnvRedis)})
	h := testAPI(t, func(d *Deps) { d.PerUser = ratelimit.New(own, prefix+"rl:", 1, 1) })
	require.Equal(t, http.StatusAccepted, buyFrom(h, "alice", "192.0.2.1:1", nil).Code)
	assertLimited(t, buyFrom(h, "alice", "192.0.2.1:1", nil))
	require.NoError(t, own.Close())
	assert.Equal(t, http.StatusAccepted, buyFrom(h, "alice", "192.0.2.1:1", nil).Code)
}

// TestRateLimitedBuysAreCounted: a buy refused by the limiter shows in
// seckill_buy_requests_total like every other buy outcome.
func TestRateLimitedBuysAreCounted(t *testing.T) {
	rdb, prefix := testsvc.Redis(t)
	h := testAPI(t, func(d *Deps) { d.PerUser = ratelimit.New(rdb, prefix+"rl:", 1, 1) })
	require.Equal(t, http.StatusAccepted, buyFrom(h, "alice", "192.0.2.1:1", nil).Code)
	assertLimited(t, buyFrom(h, "alice", "192.0.2.1:1", nil))
	metrics := send(h, "GET", "/metrics", nil, nil).Body.String()
	assert.Contains(t, metrics, `seckill_buy_requests_total{outcome="accepted"} 1`)
	assert.Contains(t, metrics, `seckill_buy_requests_total{outcome="rate_limited"} 1`)
}
