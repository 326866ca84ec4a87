package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/config"
)

const testSecret = "test-jwt-secret-0123456789abcdef0123"

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// rsaKey returns a new 2048-bit RSA key.
func rsaKey(t testing.TB) *rsa.PrivateKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	return k
}

// ecKey returns a new P-256 ECDSA key.
func ecKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	return k
}

func baseConfig() config.Auth {
	return config.Auth{Mode: config.AuthJWT, JWTLeeway: 30 * time.Second, JWTUserClaim: "sub", JWTJWKSRefresh: 5 * time.Minute}
}

func hsConfig() config.Auth {
	c := baseConfig()
	c.JWTSecret = testSecret
	return c
}

func sign(t testing.TB, m jwt.SigningMethod, key any, kid string, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(m, claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	require.NoError(t, err)
	return s
}

func live(user string) jwt.MapClaims {
	return jwt.MapClaims{"sub": user, "exp": time.Now().Add(time.Hour).Unix()}
}

func with(c jwt.MapClaims, kv ...any) jwt.MapClaims {
	out := jwt.MapClaims{}
	for k, v := range c {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(out, kv[i].(string))
		} else {
			out[kv[i].(string)] = kv[i+1]
		}
	}
	return out
}

func newVerifier(t *testing.T, cfg config.Auth) *Verifier {
	t.Helper()
	v, err := New(t.Context(), cfg, quiet)
	require.NoError(t, err)
	t.Cleanup(v.Close)
	return v
}

func TestHS256(t *testing.T) {
	cfg := hsConfig()
	cfg.JWTIssuer, cfg.JWTAudience = "https://id.shop.test", "seckill"
	v := newVerifier(t, cfg)
	hs := func(c jwt.MapClaims) string { return sign(t, jwt.SigningMethodHS256, []byte(testSecret), "", c) }
	now := time.Now()
	good := with(live("alice"), "iss", cfg.JWTIssuer, "aud", []string{"other", "seckill"})

	user, err := v.Verify(t.Context(), hs(good))
	require.NoError(t, err)
	assert.Equal(t, "alice", user)
	for name, c := range map[string]jwt.MapClaims{
		"expired within the leeway": with(good, "exp", now.Add(-10*time.Second).Unix()),
		"nbf within the leeway":     with(good, "nbf", now.Add(10*time.Second).Unix()),
		"aud as a string":           with(good, "aud", "seckill"),
	} {
		_, err := v.Verify(t.Context(), hs(c))
		assert.NoError(t, err, name)
	}

	rsaKey := rsaKey(t)
	unsignedNone, err := jwt.NewWithClaims(jwt.SigningMethodNone, good).SignedString(jwt.UnsafeAllowNoneSignatureType)
	require.NoError(t, err)
	parts := strings.Split(hs(good), ".")
	for name, tc := range map[string]struct {
		token string
		want  *Error
	}{
		"expired":          {hs(with(good, "exp", now.Add(-time.Minute).Unix())), ErrExpired},
		"not yet valid":    {hs(with(good, "nbf", now.Add(time.Minute).Unix())), ErrNotYetValid},
		"no exp":           {hs(with(good, "exp", nil)), ErrMissingClaim},
		"no claims":        {hs(jwt.MapClaims{}), ErrMissingClaim},
		"no iss":           {hs(with(good, "iss", nil)), ErrMissingClaim},
		"other issuer":     {hs(with(good, "iss", "https://evil.test")), ErrIssuer},
		"other audience":   {hs(with(good, "aud", "shop")), ErrAudience},
		"no user":          {hs(with(good, "sub", nil)), ErrNoUser},
		"numeric user":     {hs(with(good, "sub", 42)), ErrNoUser},
		"exp a string":     {hs(with(good, "exp", "tomorrow")), ErrMalformed},
		"wrong secret":     {sign(t, jwt.SigningMethodHS256, []byte("another-secret-0123456789abcdef0123"), "", good), ErrSignature},
		"HS512":            {sign(t, jwt.SigningMethodHS512, []byte(testSecret), "", good), ErrSignature},
		"alg none":         {unsignedNone, ErrSignature},
		"RS256":            {sign(t, jwt.SigningMethodRS256, rsaKey, "", good), ErrSignature},
		"payload swapped":  {parts[0] + "." + hs(with(good, "sub", "bob"))[len(parts[0])+1:strings.LastIndexByte(hs(with(good, "sub", "bob")), '.')] + "." + parts[2], ErrSignature},
		"signature cut":    {strings.Join(parts[:2], ".") + ".", ErrSignature},
		"two parts":        {strings.Join(parts[:2], "."), ErrMalformed},
		"garbage":          {"not-a-token", ErrMalformed},
		"empty":            {"", ErrMalformed},
		"header not JSON":  {base64.RawURLEncoding.EncodeToString([]byte("{")) + "." + parts[1] + "." + parts[2], ErrMalformed},
		"larger than 8KiB": {hs(with(good, "pad", strings.Repeat("x", MaxTokenBytes))), ErrTooLarge},
	} {
		user, err := v.Verify(t.Context(), tc.token)
		assert.Equal(t, tc.want, err, name)
		assert.Empty(t, user, name)
	}
}

func TestUserClaim(t *testing.T) {
	cfg := hsConfig()
	cfg.JWTUserClaim = "uid"
	v := newVerifier(t, cfg)
	tok := sign(t, jwt.SigningMethodHS256, []byte(testSecret), "", with(live("alice"), "uid", "shopper-7"))
	user, err := v.Verify(t.Context(), tok)
	require.NoError(t, err)
	assert.Equal(t, "shopper-7", user)
	_, err = v.Verify(t.Context(), sign(t, jwt.SigningMethodHS256, []byte(testSecret), "", live("alice")))
	assert.Equal(t, ErrNoUser, err, "sub is not read when another claim is configured")
}

func TestMintIsAccepted(t *testing.T) {
	cfg := hsConfig()
	cfg.JWTIssuer, cfg.JWTAudience = "iss-1", "aud-1"
	v := newVerifier(t, cfg)
	tok, err := Mint(cfg, "alice", time.Hour, time.Now())
	require.NoError(t, err)
	user, err := v.Verify(t.Context(), tok)
	require.NoError(t, err)
	assert.Equal(t, "alice", user)

	old, err := Mint(cfg, "alice", time.Minute, time.Now().Add(-time.Hour))
	require.NoError(t, err)
	_, err = v.Verify(t.Context(), old)
	assert.Equal(t, ErrExpired, err)
}

// jwksServer serves a JWK Set that a test changes, counting fetches.
type jwksServer struct {
	*httptest.Server
	mu      sync.Mutex
	keys    []jwkset.JWKMarshal
	fetches atomic.Int64
	hold    chan struct{} // when set, fetches wait for it
}

func newJWKSServer(t *testing.T) *jwksServer {
	s := &jwksServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.fetches.Add(1)
		s.mu.Lock()
		hold := s.hold
		body, _ := json.Marshal(jwkset.JWKSMarshal{Keys: s.keys})
		s.mu.Unlock()
		if hold != nil {
			<-hold
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *jwksServer) publish(t *testing.T, keys map[string]any, alg map[string]string) {
	t.Helper()
	var set []jwkset.JWKMarshal
	for kid, k := range keys {
		jwk, err := jwkset.NewJWKFromKey(k, jwkset.JWKOptions{Marshal: jwkset.JWKMarshalOptions{Private: true}, Metadata: jwkset.JWKMetadataOptions{KID: kid, ALG: jwkset.ALG(alg[kid]), USE: jwkset.UseSig}})
		require.NoError(t, err)
		set = append(set, jwk.Marshal())
	}
	s.mu.Lock()
	s.keys = set
	s.mu.Unlock()
}

func jwksConfig(url string) config.Auth {
	c := baseConfig()
	c.JWTJWKSURL = url
	return c
}

func TestJWKSRotationByKid(t *testing.T) {
	k1 := rsaKey(t)
	k2 := ecKey(t)
	srv := newJWKSServer(t)
	srv.publish(t, map[string]any{"k1": &k1.PublicKey}, map[string]string{"k1": "RS256"})
	v := newVerifier(t, jwksConfig(srv.URL))
	require.EqualValues(t, 1, srv.fetches.Load(), "fetched at start")

	user, err := v.Verify(t.Context(), sign(t, jwt.SigningMethodRS256, k1, "k1", live("alice")))
	require.NoError(t, err)
	assert.Equal(t, "alice", user)
	assert.EqualValues(t, 1, srv.fetches.Load(), "a known key costs no fetch")

	// The identity service rotates to k2: its first token fetches the set.
	srv.publish(t, map[string]any{"k1": &k1.PublicKey, "k2": &k2.PublicKey}, nil)
	user, err = v.Verify(t.Context(), sign(t, jwt.SigningMethodES256, k2, "k2", live("bob")))
	require.NoError(t, err)
	assert.Equal(t, "bob", user)
	assert.EqualValues(t, 2, srv.fetches.Load())

	// Made-up kids right after cost no further fetch.
	for i := range 50 {
		_, err := v.Verify(t.Context(), sign(t, jwt.SigningMethodES256, k2, "made-up-"+string(rune('a'+i%26)), live("eve")))
		assert.Equal(t, ErrUnknownKey, err)
	}
	assert.EqualValues(t, 2, srv.fetches.Load(), "unknown kids fetch at most every MinRefetch")

	// k1 is withdrawn: after the next refresh its tokens are refused.
	srv.publish(t, map[string]any{"k2": &k2.PublicKey}, nil)
	<-v.keys.refetch(true)
	_, err = v.Verify(t.Context(), sign(t, jwt.SigningMethodRS256, k1, "k1", live("alice")))
	assert.Equal(t, ErrUnknownKey, err)
	_, err = v.Verify(t.Context(), sign(t, jwt.SigningMethodES256, k2, "k2", live("bob")))
	assert.NoError(t, err)
}

func TestJWKSRefusesConfusion(t *testing.T) {
	rk := rsaKey(t)
	ek := ecKey(t)
	srv := newJWKSServer(t)
	srv.publish(t, map[string]any{"rsa": &rk.PublicKey, "ec": &ek.PublicKey, "oct": []byte(testSecret)}, map[string]string{"rsa": "RS256"})
	v := newVerifier(t, jwksConfig(srv.URL))

	der, err := x509.MarshalPKIXPublicKey(&rk.PublicKey)
	require.NoError(t, err)
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	for name, tok := range map[string]string{
		"HS256 keyed with the RSA public key": sign(t, jwt.SigningMethodHS256, pubPEM, "rsa", live("mallory")),
		"HS256 keyed with the raw key bytes":  sign(t, jwt.SigningMethodHS256, der, "rsa", live("mallory")),
		"HS256 with the set's oct key":        sign(t, jwt.SigningMethodHS256, []byte(testSecret), "oct", live("mallory")),
		"ES256 naming the RSA key":            sign(t, jwt.SigningMethodES256, ek, "rsa", live("mallory")),
		"RS256 naming the EC key":             sign(t, jwt.SigningMethodRS256, rk, "ec", live("mallory")),
		"RS384":                               sign(t, jwt.SigningMethodRS384, rk, "rsa", live("mallory")),
		"PS256":                               sign(t, jwt.SigningMethodPS256, rk, "rsa", live("mallory")),
		"no kid with several keys":            sign(t, jwt.SigningMethodRS256, rk, "", live("mallory")),
	} {
		user, err := v.Verify(t.Context(), tok)
		assert.Error(t, err, name)
		assert.Empty(t, user, name)
		var ae *Error
		assert.ErrorAs(t, err, &ae, name)
	}
	_, err = v.Verify(t.Context(), sign(t, jwt.SigningMethodRS256, rk, "rsa", live("alice")))
	assert.NoError(t, err)
	_, err = v.Verify(t.Context(), sign(t, jwt.SigningMethodES256, ek, "ec", live("alice")))
	assert.NoError(t, err)
}

// TestKnownKeysNeverWaitForAFetch: while a fetch of the set hangs, tokens
// signed by a key held are verified; one with an unknown kid gives up after
// KeyWait.
func TestKnownKeysNeverWaitForAFetch(t *testing.T) {
	k1 := rsaKey(t)
	srv := newJWKSServer(t)
	srv.publish(t, map[string]any{"k1": &k1.PublicKey}, nil)
	v := newVerifier(t, jwksConfig(srv.URL))

	hold := make(chan struct{})
	srv.mu.Lock()
	srv.hold = hold
	srv.mu.Unlock()
	unknown := make(chan error, 1)
	go func() {
		_, err := v.Verify(t.Context(), sign(t, jwt.SigningMethodRS256, k1, "k9", live("eve")))
		unknown <- err
	}()
	require.Eventually(t, func() bool { return srv.fetches.Load() == 2 }, 5*time.Second, time.Millisecond, "the unknown kid started a fetch")
	for range 20 {
		_, err := v.Verify(t.Context(), sign(t, jwt.SigningMethodRS256, k1, "k1", live("alice")))
		require.NoError(t, err)
	}
	assert.Equal(t, ErrUnknownKey, <-unknown)
	close(hold)
}

func TestJWKSUnreachableAtStart(t *testing.T) {
	srv := newJWKSServer(t)
	url := srv.URL
	srv.Close()
	v := newVerifier(t, jwksConfig(url))
	k1 := rsaKey(t)
	_, err := v.Verify(t.Context(), sign(t, jwt.SigningMethodRS256, k1, "k1", live("alice")))
	assert.Equal(t, ErrUnknownKey, err, "refused, not an error of another kind")
}

func TestJWKSFile(t *testing.T) {
	k1 := ecKey(t)
	jwk, err := jwkset.NewJWKFromKey(&k1.PublicKey, jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{KID: "f1"}})
	require.NoError(t, err)
	data, err := json.Marshal(jwkset.JWKSMarshal{Keys: []jwkset.JWKMarshal{jwk.Marshal()}})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "jwks.json")
	require.NoError(t, os.WriteFile(path, data, 0o600))

	cfg := baseConfig()
	cfg.JWTJWKSFile = path
	v := newVerifier(t, cfg)
	user, err := v.Verify(t.Context(), sign(t, jwt.SigningMethodES256, k1, "f1", live("alice")))
	require.NoError(t, err)
	assert.Equal(t, "alice", user)
	user, err = v.Verify(t.Context(), sign(t, jwt.SigningMethodES256, k1, "", live("alice")))
	require.NoError(t, err, "a set of one key serves tokens without kid")
	assert.Equal(t, "alice", user)

	for name, content := range map[string]string{
		"not JSON":      "{",
		"no usable key": `{"keys":[{"kty":"oct","k":"c2VjcmV0LXNlY3JldC1zZWNyZXQ","kid":"o"}]}`,
	} {
		bad := filepath.Join(t.TempDir(), "bad.json")
		require.NoError(t, os.WriteFile(bad, []byte(content), 0o600))
		cfg.JWTJWKSFile = bad
		_, err := New(t.Context(), cfg, quiet)
		assert.Error(t, err, name)
	}
	cfg.JWTJWKSFile = filepath.Join(t.TempDir(), "missing.json")
	_, err = New(t.Context(), cfg, quiet)
	assert.Error(t, err)
}

func FuzzVerify(f *testing.F) {
	good, err := Mint(hsConfig(), "alice", time.Hour, time.Now())
	require.NoError(f, err)
	parts := strings.Split(good, ".")
	for _, s := range []string{
		good, good + "x", parts[0] + "." + parts[1] + ".", parts[0] + "..", "..", ".", "",
		"eyJhbGciOiJub25lIn0.eyJzdWIiOiJhbGljZSJ9.",
		base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","kid":"../../etc"}`)) + "." + parts[1] + "." + parts[2],
		strings.Repeat("a", MaxTokenBytes+1),
	} {
		f.Add(s)
	}
	v, err := New(context.Background(), hsConfig(), quiet)
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, token string) {
		user, err := v.Verify(t.Context(), token)
		if err != nil {
			var ae *Error
			if !assert.ErrorAs(t, err, &ae) || user != "" {
				t.Fatalf("%q: %v, user %q", token, err, user)
			}
			return
		}
		// Accepted: the token must be HS256 under the secret, unexpired, with
		// that user, by the library's own reading.
		claims := jwt.MapClaims{}
		_, perr := jwt.NewParser(jwt.WithValidMethods([]string{"HS256"}), jwt.WithExpirationRequired(), jwt.WithLeeway(30*time.Second)).
			ParseWithClaims(token, claims, func(*jwt.Token) (any, error) { return []byte(testSecret), nil })
		if perr != nil || claims["sub"] != user || len(token) > MaxTokenBytes {
			t.Fatalf("%q accepted as %q: %v", token, user, perr)
		}
	})
}

// TestRememberedTokensKeepEveryCheck: a token answered from memory is still
// refused once expired, and a remembered token stops working once the key
// set that verified it is fetched again without its key.
func TestRememberedTokensKeepEveryCheck(t *testing.T) {
	v := newVerifier(t, hsConfig())
	now := time.Now()
	v.now = func() time.Time { return now }
	tok := sign(t, jwt.SigningMethodHS256, []byte(testSecret), "", jwt.MapClaims{"sub": "alice", "exp": now.Add(10 * time.Second).Unix()})
	for range 3 {
		user, err := v.Verify(t.Context(), tok)
		require.NoError(t, err)
		assert.Equal(t, "alice", user)
	}
	now = now.Add(30 * time.Second) // within exp + leeway
	_, err := v.Verify(t.Context(), tok)
	require.NoError(t, err)
	now = now.Add(15 * time.Second) // past exp + leeway
	_, err = v.Verify(t.Context(), tok)
	assert.Equal(t, ErrExpired, err)

	// A long-lived token is verified again after cacheAge, with the checks
	// of the moment.
	long := sign(t, jwt.SigningMethodHS256, []byte(testSecret), "", jwt.MapClaims{"sub": "bob", "exp": now.Add(time.Hour).Unix()})
	_, err = v.Verify(t.Context(), long)
	require.NoError(t, err)
	v.parser = jwt.NewParser(jwt.WithValidMethods([]string{"HS512"})) // what a restart with other settings would check
	_, err = v.Verify(t.Context(), long)
	require.NoError(t, err, "answered from memory")
	now = now.Add(cacheAge)
	_, err = v.Verify(t.Context(), long)
	assert.Equal(t, ErrSignature, err, "verified again after cacheAge")

	k1 := rsaKey(t)
	srv := newJWKSServer(t)
	srv.publish(t, map[string]any{"k1": &k1.PublicKey}, nil)
	kv := newVerifier(t, jwksConfig(srv.URL))
	rs := sign(t, jwt.SigningMethodRS256, k1, "k1", live("carol"))
	_, err = kv.Verify(t.Context(), rs)
	require.NoError(t, err)
	k2 := rsaKey(t)
	srv.publish(t, map[string]any{"k2": &k2.PublicKey}, nil)
	<-kv.keys.refetch(true)
	_, err = kv.Verify(t.Context(), rs)
	assert.Error(t, err, "the set no longer holds k1")
}

// BenchmarkVerify is the cost of a token seen for the first time (the cache
// emptied before each) and of one seen again, per algorithm.
func BenchmarkVerify(b *testing.B) {
	rk := rsaKey(b)
	ek := ecKey(b)
	var set jwkset.JWKSMarshal
	for kid, pub := range map[string]any{"rs": &rk.PublicKey, "es": &ek.PublicKey} {
		jwk, err := jwkset.NewJWKFromKey(pub, jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{KID: kid}})
		require.NoError(b, err)
		set.Keys = append(set.Keys, jwk.Marshal())
	}
	data, err := json.Marshal(set)
	require.NoError(b, err)
	file := filepath.Join(b.TempDir(), "jwks.json")
	require.NoError(b, os.WriteFile(file, data, 0o600))
	kc := baseConfig()
	kc.JWTJWKSFile = file
	hv, err := New(b.Context(), hsConfig(), quiet)
	require.NoError(b, err)
	kv, err := New(b.Context(), kc, quiet)
	require.NoError(b, err)
	claims := live("alice")
	for _, tc := range []struct {
		name string
		v    *Verifier
		tok  string
	}{
		{"hs256", hv, sign(b, jwt.SigningMethodHS256, []byte(testSecret), "", claims)},
		{"rs256", kv, sign(b, jwt.SigningMethodRS256, rk, "rs", claims)},
		{"es256", kv, sign(b, jwt.SigningMethodES256, ek, "es", claims)},
	} {
		for _, again := range []bool{false, true} {
			name := tc.name + "/first"
			if again {
				name = tc.name + "/again"
			}
			b.Run(name, func(b *testing.B) {
				for b.Loop() {
					if !again {
						for i := range tc.v.cache.shards {
							clear(tc.v.cache.shards[i].m)
						}
					}
					if _, err := tc.v.Verify(b.Context(), tc.tok); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
