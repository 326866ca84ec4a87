package httpapi

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/order"
)

func errorCode(t *testing.T, w *httptest.ResponseRecorder) string {
	t.Helper()
	var body map[string]string
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body), w.Body.String())
	return body["error"]
}

func TestBodyLimit(t *testing.T) {
	h := testAPI(t, nil)
	limit := int(testHTTP(t).MaxBodyBytes)
	require.Positive(t, limit)
	buy := []byte(`{"sku_id":1,"qty":1}`)
	pad := func(n int) []byte { return append(append([]byte{}, buy...), strings.Repeat(" ", n-len(buy))...) }
	user := map[string]string{"X-User-ID": "alice"}

	assert.Equal(t, http.StatusAccepted, send(h, "POST", "/api/v1/orders", pad(limit), user).Code, "a body of exactly the limit is read")

	w := send(h, "POST", "/api/v1/orders", pad(limit+1), user)
	assert.Equal(t, http.StatusRequestEntityTooLarge, w.Code, "Content-Length over the limit")
	assert.Equal(t, "invalid_request", errorCode(t, w))

	// Without a Content-Length the reader stops at the limit.
	req := httptest.NewRequest("POST", "http://seckill.test/api/v1/orders", io.MultiReader(strings.NewReader(string(pad(limit))), strings.NewReader(" ")))
	req.ContentLength = -1
	req.Header.Set("X-User-ID", "alice")
	w = httptest.NewRecorder()
	h.ServeHTTP(w, req)
	assert.Equal(t, http.StatusRequestEntityTooLarge, w.Code, "chunked body over the limit")

	admin := map[string]string{"Authorization": "Bearer " + testAdminToken}
	assert.Equal(t, http.StatusRequestEntityTooLarge, send(h, "POST", "/admin/skus", make([]byte, limit+1), admin).Code)
	assert.Equal(t, http.StatusRequestEntityTooLarge, send(h, "PUT", "/admin/skus/1/stock", make([]byte, 10*limit), admin).Code)
}

func TestServerTimeouts(t *testing.T) {
	cfg := testHTTP(t)
	srv := NewServer(cfg, testAPI(t, nil), slog.New(slog.NewTextHandler(io.Discard, nil)))
	for name, d := range map[string]time.Duration{
		"ReadHeaderTimeout": srv.ReadHeaderTimeout, "ReadTimeout": srv.ReadTimeout,
		"WriteTimeout": srv.WriteTimeout, "IdleTimeout": srv.IdleTimeout,
	} {
		assert.Positive(t, d, name)
	}
	assert.Equal(t, cfg.ReadHeaderTimeout, srv.ReadHeaderTimeout)
	assert.Equal(t, cfg.ReadTimeout, srv.ReadTimeout)
	assert.Equal(t, cfg.WriteTimeout, srv.WriteTimeout)
	assert.Equal(t, cfg.IdleTimeout, srv.IdleTimeout)
	assert.Positive(t, srv.MaxHeaderBytes)
	assert.LessOrEqual(t, srv.MaxHeaderBytes, 64<<10)
}

// TestSlowHeadersAreCut: a client that never finishes its headers
// (slowloris) is disconnected after read_header_timeout.
func TestSlowHeadersAreCut(t *testing.T) {
	cfg := testHTTP(t)
	cfg.ReadHeaderTimeout = 200 * time.Millisecond
	srv := NewServer(cfg, testAPI(t, nil), slog.New(slog.NewTextHandler(io.Discard, nil)))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		_ = srv.Close()
		assert.ErrorIs(t, <-done, http.ErrServerClosed)
	})

	conn, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "POST /api/v1/orders HTTP/1.1\r\nHost: seckill\r\nX-User-ID: alice\r\n")
	require.NoError(t, err)
	// Generous: the point is that the server hangs up, not how fast.
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = io.ReadAll(bufio.NewReader(conn))
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the server kept a connection with unfinished headers open")
	}
}

func TestAdminToken(t *testing.T) {
	h := testAPI(t, nil)
	body := []byte(`{"stock_total":5}`)
	for _, auth := range []string{
		"", "Bearer", "Bearer ", testAdminToken, "bearer " + testAdminToken, "Basic " + testAdminToken,
		"Bearer " + testAdminToken + " ", "Bearer " + testAdminToken[:len(testAdminToken)-1],
		"Bearer " + testAdminToken + "0", "Bearer " + strings.ToUpper(testAdminToken),
	} {
		w := send(h, "PUT", "/admin/skus/1/stock", body, map[string]string{"Authorization": auth})
		assert.Equal(t, http.StatusUnauthorized, w.Code, "%q", auth)
		assert.Equal(t, "unauthorized", errorCode(t, w), "%q", auth)
	}
	w := send(h, "PUT", "/admin/skus/1/stock", body, map[string]string{"Authorization": "Bearer " + testAdminToken})
	assert.Equal(t, http.StatusOK, w.Code, w.Body.String())

	// A shopper identity is no admin credential.
	w = send(h, "GET", "/admin/skus/1/audit", nil, map[string]string{"X-User-ID": "admin"})
	assert.Equal(t, http.StatusUnauthorized, w.Code)

	off := testAPI(t, func(d *Deps) { d.AdminToken = "" })
	for _, auth := range []string{"", "Bearer ", "Bearer " + testAdminToken} {
		w := send(off, "GET", "/admin/skus/1/audit", nil, map[string]string{"Authorization": auth})
		assert.Equal(t, http.StatusForbidden, w.Code, "%q", auth)
		assert.Equal(t, "admin_disabled", errorCode(t, w))
	}
}

func TestUserTokens(t *testing.T) {
	secret := "user-token-secret-0123456789"
	tok := func(id, key string) string {
		return "Bearer " + id + "." + hex.EncodeToString(UserTokenMAC([]byte(key), id))
	}
	h := testAPI(t, func(d *Deps) { d.UserTokenSecret = secret })
	get := func(headers map[string]string) *httptest.ResponseRecorder {
		return send(h, "GET", "/api/v1/orders/1-0000000000000000000000000", nil, headers)
	}

	w := get(map[string]string{"Authorization": tok("alice", secret)})
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	var v order.View
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &v))
	assert.Equal(t, "alice", v.User)

	// X-User-ID never overrides the token's user.
	w = get(map[string]string{"Authorization": tok("alice", secret), "X-User-ID": "bob"})
	require.Equal(t, http.StatusOK, w.Code)
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &v))
	assert.Equal(t, "alice", v.User)

	good := tok("alice", secret)
	flipped := []byte(good) // the same token with its last hex digit changed
	if flipped[len(flipped)-1] == '0' {
		flipped[len(flipped)-1] = '1'
	} else {
		flipped[len(flipped)-1] = '0'
	}
	for name, headers := range map[string]map[string]string{
		"missing":           {},
		"X-User-ID alone":   {"X-User-ID": "alice"},
		"another secret":    {"Authorization": tok("alice", "another-secret-0123456789")},
		"MAC of another id": {"Authorization": "Bearer alice." + hex.EncodeToString(UserTokenMAC([]byte(secret), "bob"))},
		"wrong MAC":         {"Authorization": string(flipped)},
		"truncated MAC":     {"Authorization": good[:len(good)-2]},
		"no MAC":            {"Authorization": "Bearer alice"},
		"not hex":           {"Authorization": "Bearer alice.zz"},
		"bad user id":       {"Authorization": tok("al ice", secret)},
		"not bearer":        {"Authorization": strings.Replace(good, "Bearer", "Token", 1)},
	} {
		w := get(headers)
		assert.Equal(t, http.StatusUnauthorized, w.Code, name)
		if w.Code == http.StatusUnauthorized {
			assert.Equal(t, "unauthorized", errorCode(t, w), name)
		}
	}
	for _, path := range []string{"/api/v1/orders", "/api/v1/orders/1-0000000000000000000000000/pay", "/api/v1/orders/1-0000000000000000000000000/cancel"} {
		w := send(h, "POST", path, []byte(`{"sku_id":1,"qty":1}`), map[string]string{"X-User-ID": "alice"})
		assert.Equal(t, http.StatusUnauthorized, w.Code, path)
	}

	// Without a secret the gateway's X-User-ID identifies the shopper.
	plain := testAPI(t, nil)
	assert.Equal(t, http.StatusOK, send(plain, "GET", "/api/v1/orders/1-0000000000000000000000000", nil, map[string]string{"X-User-ID": "alice"}).Code)
	assert.Equal(t, http.StatusUnauthorized, send(plain, "GET", "/api/v1/orders/1-0000000000000000000000000", nil, map[string]string{"Authorization": good}).Code)
}

func TestCORS(t *testing.T) {
	preflight := map[string]string{"Origin": "https://shop.example", "Access-Control-Request-Method": "POST"}
	origin := map[string]string{"Origin": "https://shop.example", "X-User-ID": "alice"}

	off := testAPI(t, nil)
	for _, w := range []*httptest.ResponseRecorder{
		send(off, "GET", "/api/v1/skus/1", nil, origin),
		send(off, "OPTIONS", "/api/v1/orders", nil, preflight),
		send(off, "POST", "/api/v1/orders", []byte(`{"sku_id":1,"qty":1}`), origin),
	} {
		assert.Empty(t, w.Header().Get("Access-Control-Allow-Origin"), "CORS is off by default")
		assert.Empty(t, w.Header().Get("Access-Control-Allow-Methods"))
	}

	on := testAPI(t, func(d *Deps) { d.HTTP.CORSOrigins = []string{"https://shop.example"} })
	w := send(on, "GET", "/api/v1/skus/1", nil, origin)
	assert.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, "https://shop.example", w.Header().Get("Access-Control-Allow-Origin"))
	assert.Contains(t, w.Header().Values("Vary"), "Origin")
	w = send(on, "OPTIONS", "/api/v1/orders", nil, preflight)
	assert.Equal(t, http.StatusNoContent, w.Code)
	assert.Equal(t, "https://shop.example", w.Header().Get("Access-Control-Allow-Origin"))
	assert.Contains(t, w.Header().Get("Access-Control-Allow-Methods"), "POST")
	assert.Empty(t, w.Header().Get("Access-Control-Allow-Credentials"))

	for _, o := range []string{"https://evil.example", "https://shop.example.evil", "http://shop.example", "null"} {
		w := send(on, "GET", "/api/v1/skus/1", nil, map[string]string{"Origin": o})
		assert.Empty(t, w.Header().Get("Access-Control-Allow-Origin"), o)
		w = send(on, "OPTIONS", "/api/v1/orders", nil, map[string]string{"Origin": o, "Access-Control-Request-Method": "POST"})
		assert.Empty(t, w.Header().Get("Access-Control-Allow-Origin"), o)
		assert.NotEqual(t, http.StatusNoContent, w.Code, o)
	}

	anyOrigin := testAPI(t, func(d *Deps) { d.HTTP.CORSOrigins = []string{"*"} })
	w = send(anyOrigin, "GET", "/api/v1/skus/1", nil, map[string]string{"Origin": "https://elsewhere.example"})
	assert.Equal(t, "https://elsewhere.example", w.Header().Get("Access-Control-Allow-Origin"))
}

// leakyShop fails with an error that carries internals.
type leakyShop struct{ stubShop }

func (*leakyShop) SKU(_ context.Context, _ uint64) (*order.SKUView, error) {
	return nil, errors.New("Error 1045: Access denied for user 'seckill'@'10.0.0.9' (using password: YES) at u:hunter2@tcp(db:3306)/seckill")
}

func TestUnknownErrorsRevealNothing(t *testing.T) {
	h := testAPI(t, func(d *Deps) { d.Shop = &leakyShop{} })
	w := send(h, "GET", "/api/v1/skus/1", nil, nil)
	assert.Equal(t, http.StatusInternalServerError, w.Code)
	assert.Equal(t, "internal", errorCode(t, w))
	for _, s := range []string{"hunter2", "Access denied", "tcp(", "1045"} {
		assert.NotContains(t, w.Body.String(), s)
	}
}
