package app

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/auth"
	"github.com/seckill/seckill/internal/config"
	"github.com/seckill/seckill/internal/testutil"
)

// identityService plays a shop's identity provider: it publishes a JWK Set
// at its URL and signs shoppers' tokens with the key it is rotated to.
type identityService struct {
	t   *testing.T
	srv *httptest.Server

	mu   sync.Mutex
	set  []jwkset.JWKMarshal
	kid  string
	sign func(claims jwt.MapClaims) string
}

func newIdentityService(t *testing.T) *identityService {
	id := &identityService{t: t}
	id.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		id.mu.Lock()
		body, _ := json.Marshal(jwkset.JWKSMarshal{Keys: id.set})
		id.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(id.srv.Close)
	return id
}

// rotate publishes key (an *rsa.PrivateKey or *ecdsa.PrivateKey) under kid,
// keeping the keys published before, and signs from now on with it.
func (id *identityService) rotate(kid string, key any) {
	id.t.Helper()
	var pub any
	var method jwt.SigningMethod
	switch k := key.(type) {
	case *rsa.PrivateKey:
		pub, method = &k.PublicKey, jwt.SigningMethodRS256
	case *ecdsa.PrivateKey:
		pub, method = &k.PublicKey, jwt.SigningMethodES256
	}
	jwk, err := jwkset.NewJWKFromKey(pub, jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{KID: kid, USE: jwkset.UseSig}})
	require.NoError(id.t, err)
	id.mu.Lock()
	defer id.mu.Unlock()
	id.set = append(id.set, jwk.Marshal())
	id.kid = kid
	id.sign = func(claims jwt.MapClaims) string {
		tok := jwt.NewWithClaims(method, claims)
		tok.Header["kid"] = kid
		s, err := tok.SignedString(key)
		require.NoError(id.t, err)
		return s
	}
}

func (id *identityService) token(user string) string {
	id.mu.Lock()
	sign := id.sign
	id.mu.Unlock()
	return sign(jwt.MapClaims{"sub": user, "iss": "https://id.shop.test", "aud": "seckill", "exp": time.Now().Add(time.Hour).Unix()})
}

// TestShopperJWTEndToEnd runs two instances in jwt mode against MySQL with
// keys from a JWK Set: shoppers buy and read their orders with RS256 tokens,
// the identity service rotates to an ES256 key by kid mid-sale, and every
// token that is not a valid one is 401 with nothing written.
func TestShopperJWTEndToEnd(t *testing.T) {
	id := newIdentityService(t)
	k1, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	id.rotate("k1", k1)
	s := startSale(t, saleOpts{instances: 2, env: map[string]string{
		"SECKILL_AUTH_MODE":         "jwt",
		"SECKILL_AUTH_JWT_JWKS_URL": id.srv.URL + "/.well-known/jwks.json",
		"SECKILL_AUTH_JWT_ISSUER":   "https://id.shop.test",
		"SECKILL_AUTH_JWT_AUDIENCE": "seckill",
	}})
	s.token = id.token
	sku := s.seed(3, 1)

	alice := s.buy(0, sku, "alice", 1)
	require.Equal(t, http.StatusAccepted, alice.Status, alice.Raw)
	got := s.waitStatus("alice", alice.Str("order_id"), "pending_payment")
	assert.Equal(t, "alice", got.Str("user_id"))
	assert.Equal(t, http.StatusNotFound, s.do(1, "GET", "/api/v1/orders/"+alice.Str("order_id"), "bob", nil).Status,
		"bob's token does not read alice's order")
	again := s.buy(1, sku, "alice", 1)
	assert.Equal(t, http.StatusConflict, again.Status, "the limit holds for the token's shopper: %s", again.Raw)

	// The identity service rotates to an EC key: both instances take its
	// tokens at once, and the old key's tokens still verify while published.
	k2, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	oldToken := id.token("carol")
	id.rotate("k2", k2)
	for i, user := range []string{"bob", "dave"} {
		r := s.buy(i, sku, user, 1)
		require.Equal(t, http.StatusAccepted, r.Status, "%s on instance %d: %s", user, i, r.Raw)
	}
	r := s.raw(0, "GET", "/api/v1/orders/"+alice.Str("order_id"), "Bearer "+oldToken, "")
	assert.Equal(t, http.StatusNotFound, r.Status, "carol's RS256 token is still good: she just does not own the order")

	// Refused: 401 unauthorized with a stable detail, and nothing written.
	der, err := x509.MarshalPKIXPublicKey(&k1.PublicKey)
	require.NoError(t, err)
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	confused := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "mallory", "iss": "https://id.shop.test", "aud": "seckill", "exp": time.Now().Add(time.Hour).Unix()})
	confused.Header["kid"] = "k1"
	confusedToken, err := confused.SignedString(pubPEM)
	require.NoError(t, err)
	none, err := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims{"sub": "mallory", "exp": time.Now().Add(time.Hour).Unix()}).
		SignedString(jwt.UnsafeAllowNoneSignatureType)
	require.NoError(t, err)
	sign := func(c jwt.MapClaims) string {
		id.mu.Lock()
		defer id.mu.Unlock()
		return id.sign(c)
	}
	now := time.Now()
	for name, tc := range map[string]struct{ header, detail string }{
		"X-User-ID only":  {"", "send Authorization: Bearer <JWT>"},
		"expired":         {"Bearer " + sign(jwt.MapClaims{"sub": "mallory", "iss": "https://id.shop.test", "aud": "seckill", "exp": now.Add(-time.Hour).Unix()}), auth.ErrExpired.Detail},
		"not yet valid":   {"Bearer " + sign(jwt.MapClaims{"sub": "mallory", "iss": "https://id.shop.test", "aud": "seckill", "exp": now.Add(2 * time.Hour).Unix(), "nbf": now.Add(time.Hour).Unix()}), auth.ErrNotYetValid.Detail},
		"other audience":  {"Bearer " + sign(jwt.MapClaims{"sub": "mallory", "iss": "https://id.shop.test", "aud": "another-app", "exp": now.Add(time.Hour).Unix()}), auth.ErrAudience.Detail},
		"no claims":       {"Bearer " + sign(jwt.MapClaims{}), auth.ErrMissingClaim.Detail},
		"alg none":        {"Bearer " + none, auth.ErrSignature.Detail},
		"HS/RS confusion": {"Bearer " + confusedToken, auth.ErrSignature.Detail},
		"malformed":       {"Bearer mallory.0123abcd", auth.ErrMalformed.Detail},
		"oversized":       {"Bearer " + strings.Repeat("a", 9000), auth.ErrTooLarge.Detail},
	} {
		r := s.raw(1, "POST", "/api/v1/orders", tc.header, fmt.Sprintf(`{"sku_id":%d,"qty":1}`, sku))
		assert.Equal(t, http.StatusUnauthorized, r.Status, "%s: %s", name, r.Raw)
		assert.Equal(t, "unauthorized", r.Str("error"), name)
		assert.Equal(t, tc.detail, r.Str("detail"), name)
	}
	rep := s.drained(sku)
	assert.EqualValues(t, 3, rep.Sold, "alice, bob and dave; no refused token bought")
	assert.EqualValues(t, 3, rep.Orders)
}

// TestShopperHS256EndToEnd: with a shared secret, the tokens `seckill token`
// mints buy, pay and cancel through the API.
func TestShopperHS256EndToEnd(t *testing.T) {
	const secret = "e2e-hs256-secret-0123456789abcdef0123"
	s := startSale(t, saleOpts{env: map[string]string{"SECKILL_AUTH_MODE": "jwt", "SECKILL_AUTH_JWT_SECRET": secret}})
	s.token = func(user string) string {
		tok, err := auth.Mint(config.Auth{JWTSecret: secret, JWTUserClaim: "sub"}, user, time.Hour, time.Now())
		require.NoError(t, err)
		return tok
	}
	sku := s.seed(2, 1)
	a := s.buy(0, sku, "alice", 1)
	require.Equal(t, http.StatusAccepted, a.Status, a.Raw)
	b := s.buy(0, sku, "bob", 1)
	require.Equal(t, http.StatusAccepted, b.Status, b.Raw)
	s.waitStatus("alice", a.Str("order_id"), "pending_payment")
	s.waitStatus("bob", b.Str("order_id"), "pending_payment")
	assert.Equal(t, http.StatusOK, s.do(0, "POST", "/api/v1/orders/"+a.Str("order_id")+"/pay", "alice", nil).Status)
	assert.Equal(t, http.StatusOK, s.do(0, "POST", "/api/v1/orders/"+b.Str("order_id")+"/cancel", "bob", nil).Status)
	assert.Equal(t, http.StatusNotFound, s.do(0, "POST", "/api/v1/orders/"+a.Str("order_id")+"/cancel", "bob", nil).Status)
	r := s.raw(0, "POST", "/api/v1/orders", "", fmt.Sprintf(`{"sku_id":%d,"qty":1}`, sku))
	assert.Equal(t, http.StatusUnauthorized, r.Status, "X-User-ID alone: %s", r.Raw)
	rep := s.drained(sku)
	assert.EqualValues(t, 1, rep.Paid)
}

// raw sends a request with the given Authorization header (none when empty)
// and X-User-ID "mallory", which jwt mode ignores.
func (s *deployment) raw(i int, method, path, authorization, body string) testutil.Reply {
	s.t.Helper()
	c := s.caller()
	c.UserToken = nil
	req, err := c.Request(s.urls[i%len(s.urls)], method, path, "mallory", body)
	require.NoError(s.t, err)
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	r, err := c.Send(req)
	require.NoError(s.t, err)
	return r
}
