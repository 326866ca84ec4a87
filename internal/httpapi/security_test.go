package httpapi

import (
	"bufio"
	"context"
	"crypto/sha256"
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

	"github.com/golang-jwt/jwt/v5"

	"github.com/seckill/seckill/internal/auth"
	"github.com/seckill/seckill/internal/config"
	"github.com/seckill/seckill/internal/order"
	"github.com/seckill/seckill/internal/sale"
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
		"", "Bearer", "Bearer ", testAdminToken, "Basic " + testAdminToken,
		"Bearer " + testAdminToken + " ", "Bearer " + testAdminToken[:len(testAdminToken)-1],
		"Bearer " + testAdminToken + "0", "Bearer " + strings.ToUpper(testAdminToken),
	} {
		w := send(h, "PUT", "/admin/skus/1/stock", body, map[string]string{"Authorization": auth})
		assert.Equal(t, http.StatusUnauthorized, w.Code, "%q", auth)
		assert.Equal(t, "unauthorized", errorCode(t, w), "%q", auth)
	}
	for _, scheme := range []string{"Bearer ", "bearer ", "BEARER "} { // the scheme name is case-insensitive (RFC 9110)
		w := send(h, "PUT", "/admin/skus/1/stock", body, map[string]string{"Authorization": scheme + testAdminToken})
		assert.Equal(t, http.StatusOK, w.Code, w.Body.String())
	}

	// A shopper identity is no admin credential.
	w := send(h, "GET", "/admin/skus/1/audit", nil, map[string]string{"X-User-ID": "admin"})
	assert.Equal(t, http.StatusUnauthorized, w.Code)

	off := testAPI(t, func(d *Deps) { d.AdminToken = "" })
	for _, auth := range []string{"", "Bearer ", "Bearer " + testAdminToken} {
		w := send(off, "GET", "/admin/skus/1/audit", nil, map[string]string{"Authorization": auth})
		assert.Equal(t, http.StatusForbidden, w.Code, "%q", auth)
		assert.Equal(t, "admin_disabled", errorCode(t, w))
	}
}

// jwtAPI is the stub API in jwt mode with an HS256 secret; mint signs
// claims with it.
func jwtAPI(t testing.TB) (h http.Handler, mint func(jwt.MapClaims) string) {
	t.Helper()
	cfg := config.Auth{Mode: config.AuthJWT, JWTSecret: testJWTSecret, JWTLeeway: 30 * time.Second, JWTUserClaim: "sub"}
	v, err := auth.New(t.Context(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	h = testAPI(t, func(d *Deps) { d.Tokens = v })
	return h, func(c jwt.MapClaims) string {
		s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString([]byte(testJWTSecret))
		require.NoError(t, err)
		return "Bearer " + s
	}
}

const testJWTSecret = "test-jwt-secret-0123456789abcdef0123"

func TestShopperJWT(t *testing.T) {
	h, mint := jwtAPI(t)
	get := func(headers map[string]string) *httptest.ResponseRecorder {
		return send(h, "GET", "/api/v1/orders/1-0000000000000000000000000", nil, headers)
	}
	exp := time.Now().Add(time.Hour).Unix()
	good := mint(jwt.MapClaims{"sub": "alice", "exp": exp})

	w := get(map[string]string{"Authorization": good})
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	var v order.View
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &v))
	assert.Equal(t, "alice", v.User)
	w = get(map[string]string{"Authorization": "bearer " + good[len("Bearer "):]})
	assert.Equal(t, http.StatusOK, w.Code, "the scheme name is case-insensitive")

	// X-User-ID never overrides the token's user.
	w = get(map[string]string{"Authorization": good, "X-User-ID": "bob"})
	require.Equal(t, http.StatusOK, w.Code)
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &v))
	assert.Equal(t, "alice", v.User)

	for name, tc := range map[string]struct {
		headers map[string]string
		detail  string
	}{
		"missing":         {map[string]string{}, "send Authorization: Bearer <JWT>"},
		"X-User-ID alone": {map[string]string{"X-User-ID": "alice"}, "send Authorization: Bearer <JWT>"},
		"not bearer":      {map[string]string{"Authorization": strings.Replace(good, "Bearer", "Token", 1)}, "send Authorization: Bearer <JWT>"},
		"expired":         {map[string]string{"Authorization": mint(jwt.MapClaims{"sub": "alice", "exp": time.Now().Add(-time.Hour).Unix()})}, auth.ErrExpired.Detail},
		"no exp":          {map[string]string{"Authorization": mint(jwt.MapClaims{"sub": "alice"})}, auth.ErrMissingClaim.Detail},
		"no user":         {map[string]string{"Authorization": mint(jwt.MapClaims{"exp": exp})}, auth.ErrNoUser.Detail},
		"bad user id":     {map[string]string{"Authorization": mint(jwt.MapClaims{"sub": "al ice", "exp": exp})}, errTokenUser.Detail},
		"wrong signature": {map[string]string{"Authorization": good[:len(good)-2] + "AA"}, auth.ErrSignature.Detail},
		"malformed":       {map[string]string{"Authorization": "Bearer alice.0123abcd"}, auth.ErrMalformed.Detail},
		"oversized":       {map[string]string{"Authorization": mint(jwt.MapClaims{"sub": "alice", "exp": exp, "pad": strings.Repeat("x", 9000)})}, auth.ErrTooLarge.Detail},
	} {
		w := get(tc.headers)
		require.Equal(t, http.StatusUnauthorized, w.Code, name)
		var body map[string]string
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body), name)
		assert.Equal(t, "unauthorized", body["error"], name)
		assert.Equal(t, tc.detail, body["detail"], name)
	}
	for _, path := range []string{"/api/v1/orders", "/api/v1/orders/1-0000000000000000000000000/pay", "/api/v1/orders/1-0000000000000000000000000/cancel"} {
		w := send(h, "POST", path, []byte(`{"sku_id":1,"qty":1}`), map[string]string{"X-User-ID": "alice"})
		assert.Equal(t, http.StatusUnauthorized, w.Code, path)
	}

	// In header mode the gateway's X-User-ID identifies the shopper and a
	// bearer token alone identifies nobody.
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

func (*leakyShop) SKU(_ context.Context, _ uint64) (*sale.SKUView, error) {
	return nil, errors.New("Error 1045: Access denied for user 'seckill'@'10.0.0.9' (using password: YES) at u:hunter2@tcp(db:3306)/seckill")
}

func TestUnknownErrorsRevealNothing(t *testing.T) {
	h := rawAPI(t, func(d *Deps) { d.Sales = &leakyShop{} })
	w := send(h, "GET", "/api/v1/skus/1", nil, nil)
	assert.Equal(t, http.StatusInternalServerError, w.Code)
	assert.Equal(t, "internal", errorCode(t, w))
	for _, s := range []string{"hunter2", "Access denied", "tcp(", "1045"} {
		assert.NotContains(t, w.Body.String(), s)
	}
}

func TestListQueries(t *testing.T) {
	h := testAPI(t, nil)
	list := func(query string) *httptest.ResponseRecorder {
		return send(h, "GET", "/api/v1/skus"+query, nil, nil)
	}
	var ids []uint64
	cursor := ""
	for pages := 0; pages < 10; pages++ {
		w := list("?limit=2" + cursor)
		require.Equal(t, http.StatusOK, w.Code, w.Body.String())
		var p struct {
			Items []struct {
				ID uint64 `json:"id"`
			} `json:"items"`
			NextCursor string `json:"next_cursor"`
		}
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &p))
		for _, it := range p.Items {
			ids = append(ids, it.ID)
		}
		if p.NextCursor == "" {
			break
		}
		cursor = "&cursor=" + p.NextCursor
	}
	assert.Equal(t, []uint64{1, 2, 3, 4, 5}, ids, "pages of 2 list every SKU once")
	w := list("?state=ended")
	require.Equal(t, http.StatusOK, w.Code)
	assert.JSONEq(t, `{"items":[]}`, w.Body.String())
	for _, q := range []string{"?state=ended,live", "?state=ended&state=live", "?state=live,live&limit=100"} {
		w := list(q)
		require.Equal(t, http.StatusOK, w.Code, q)
		assert.Contains(t, w.Body.String(), `"id":5`, q)
	}

	for _, q := range []string{
		"?limit=0", "?limit=101", "?limit=x", "?limit=-1", "?limit=", "?limit=1.5",
		"?cursor=", "?cursor=zzz", "?cursor=" + encodeCursor(0), "?cursor=c2t1OjA", "?cursor=c2t1OmFiYw", "?cursor=" + strings.Repeat("A", 100),
		"?cursor=MTI", // base64 of "12": not a cursor
		"?state=", "?state=open", "?state=live,", "?state=LIVE", "?state=live&state=",
	} {
		w := list(q)
		assert.Equal(t, http.StatusBadRequest, w.Code, "%s: %s", q, w.Body.String())
		if w.Code == http.StatusBadRequest {
			assert.Equal(t, "invalid_request", errorCode(t, w), q)
		}
	}

	admin := map[string]string{"Authorization": "Bearer " + testAdminToken}
	w = send(h, "GET", "/admin/skus?limit=5", nil, admin)
	require.Equal(t, http.StatusOK, w.Code)
	assert.JSONEq(t, `{"items":[]}`, w.Body.String())
	assert.Equal(t, http.StatusBadRequest, send(h, "GET", "/admin/skus?cursor=nope", nil, admin).Code)
	assert.Equal(t, http.StatusUnauthorized, send(h, "GET", "/admin/skus", nil, nil).Code)
	assert.Equal(t, http.StatusUnauthorized, send(h, "POST", "/admin/skus/1/end", nil, nil).Code)
	assert.Equal(t, http.StatusOK, send(h, "POST", "/admin/skus/1/end", nil, admin).Code)
	assert.Equal(t, http.StatusBadRequest, send(h, "POST", "/admin/skus/0/end", nil, admin).Code)
}

// The admin token is compared as SHA-256 sums, so that a wrong token's
// length cannot be timed: a prefix, a longer token and the empty one are
// all just wrong.
func TestSameSecretComparesSums(t *testing.T) {
	const token = "admin-token-0123456789abcdef-0123456789"
	want := sha256.Sum256([]byte(token))
	assert.True(t, sameSecret(token, want))
	for _, wrong := range []string{"", token[:10], token[:len(token)-1], token + "x", strings.ToUpper(token)} {
		assert.False(t, sameSecret(wrong, want), "%q", wrong)
	}
}
