package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/config"
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

// TestRateLimitedAnswer: a request over its budget is answered 429
// rate_limited with a Retry-After of whole seconds, rounded up, and counted
// like every other buy outcome.
func TestRateLimitedAnswer(t *testing.T) {
	h := testAPI(t, func(d *Deps) { d.Shop = &stubShop{} })
	require.Equal(t, http.StatusAccepted, buyFrom(h, "alice", "192.0.2.1:1", nil).Code)
	w := buyFrom(h, "limited", "192.0.2.1:1", nil)
	require.Equal(t, http.StatusTooManyRequests, w.Code, w.Body.String())
	var body map[string]string
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body))
	assert.Equal(t, "rate_limited", body["error"])
	assert.Equal(t, "2", w.Header().Get("Retry-After"), "1.5 s rounds up")
	metrics := send(h, "GET", "/metrics", nil, nil).Body.String()
	assert.Contains(t, metrics, `seckill_buy_requests_total{outcome="accepted"} 1`)
	assert.Contains(t, metrics, `seckill_buy_requests_total{outcome="rate_limited"} 1`)
}

// TestClientAddressHonoursTrustedProxies: the client address the per-address
// limit counts comes from X-Forwarded-For only through a trusted proxy. An
// untrusted peer is its own address whatever it claims; behind a trusted
// proxy each forwarded client is its own, read from the right of the chain.
func TestClientAddressHonoursTrustedProxies(t *testing.T) {
	shop := &stubShop{}
	h := testAPI(t, func(d *Deps) {
		d.Shop = shop
		d.TrustedProxies = []string{"10.0.0.0/8"}
	})
	client := func(remote string, headers map[string]string) string {
		t.Helper()
		require.Equal(t, http.StatusAccepted, buyFrom(h, "alice", remote, headers).Code)
		return shop.client.Load().(string)
	}
	assert.Equal(t, "203.0.113.7", client("203.0.113.7:4000", map[string]string{
		"X-Forwarded-For": "198.51.100.1", "X-Real-IP": "198.51.100.101"}), "an untrusted peer rotating X-Forwarded-For is one address")
	assert.Equal(t, "198.51.100.0", client("10.1.2.3:5000", map[string]string{"X-Forwarded-For": "198.51.100.0"}))
	assert.Equal(t, "198.51.100.2", client("10.1.2.3:5000", map[string]string{"X-Forwarded-For": "192.0.2.9, 198.51.100.2, 10.9.9.9"}),
		"a chain is read from the right: the last untrusted hop is the client")
	assert.Equal(t, "10.1.2.3", client("10.1.2.3:5000", nil), "the proxy's own requests")
}
