package httpapi

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"

	"github.com/seckill/seckill/internal/auth"
	"github.com/seckill/seckill/internal/config"
	"github.com/seckill/seckill/internal/order"
	"github.com/seckill/seckill/internal/stock"
)

// benchShop answers every buy the same way, with no I/O.
type benchShop struct {
	stubShop
	err error
}

func (s *benchShop) Place(_ context.Context, user string, in order.PlaceInput) (order.Placed, error) {
	if err := in.Validate(user); err != nil {
		return order.Placed{}, err
	}
	if s.err != nil {
		return order.Placed{}, s.err
	}
	return order.Placed{OrderID: "42-06h051n2p8v751m9hwfs1nee", Status: order.StatusQueued}, nil
}

// discard is a ResponseWriter that keeps nothing, so the benchmark measures
// the handler and not a recorder.
type discard struct {
	h      http.Header
	status int
}

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(status int)      { d.status = status }

// BenchmarkPlaceOrder is the HTTP layer of the buy path, middleware
// included, on a shop that accepts or answers sold out without I/O, with the
// shopper identified by X-User-ID (header mode) or by a JWT verified in the
// process (HS256 with a secret; RS256 and ES256 with keys from a JWK Set).
// The same token comes every time, so after the first request it is answered
// from the verifier's memory; auth's BenchmarkVerify has the first-sight cost.
func BenchmarkPlaceOrder(b *testing.B) {
	cfg, err := config.Load("", nil)
	if err != nil {
		b.Fatal(err)
	}
	identities := benchIdentities(b)
	for _, tc := range []struct {
		name   string
		err    error
		status int
	}{
		{"accepted", nil, http.StatusAccepted},
		{"sold_out", stock.ErrSoldOut, http.StatusConflict},
	} {
		for _, id := range identities {
			b.Run(tc.name+"/"+id.name, func(b *testing.B) {
				h := New(Deps{
					Log:    slog.New(slog.NewTextHandler(io.Discard, nil)),
					HTTP:   cfg.HTTP,
					Shop:   &benchShop{err: tc.err},
					Tokens: id.tokens,
				})
				body := []byte(`{"sku_id":42,"qty":1}`)
				rd := bytes.NewReader(body)
				req, _ := http.NewRequest(http.MethodPost, "http://seckill.test/api/v1/orders", rd)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set(id.header, id.value)
				w := &discard{h: http.Header{}}
				b.ReportAllocs()
				for b.Loop() {
					rd.Reset(body)
					req.Body = io.NopCloser(rd)
					clear(w.h)
					h.ServeHTTP(w, req)
					if w.status != tc.status {
						b.Fatalf("status %d, want %d", w.status, tc.status)
					}
				}
			})
		}
	}
}

type benchIdentity struct {
	name          string
	tokens        TokenVerifier // nil: header mode
	header, value string
}

func benchIdentities(b *testing.B) []benchIdentity {
	b.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	claims := jwt.MapClaims{"sub": "alice", "exp": time.Now().Add(24 * time.Hour).Unix()}
	out := []benchIdentity{{name: "header", header: "X-User-ID", value: "alice"}}

	hs := config.Auth{Mode: config.AuthJWT, JWTSecret: testJWTSecret, JWTLeeway: 30 * time.Second, JWTUserClaim: "sub"}
	v, err := auth.New(b.Context(), hs, quiet)
	if err != nil {
		b.Fatal(err)
	}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(testJWTSecret))
	if err != nil {
		b.Fatal(err)
	}
	out = append(out, benchIdentity{"jwt-hs256", v, "Authorization", "Bearer " + tok})

	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		b.Fatal(err)
	}
	ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	var set jwkset.JWKSMarshal
	for kid, pub := range map[string]any{"rs": &rk.PublicKey, "es": &ek.PublicKey} {
		jwk, err := jwkset.NewJWKFromKey(pub, jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{KID: kid}})
		if err != nil {
			b.Fatal(err)
		}
		set.Keys = append(set.Keys, jwk.Marshal())
	}
	data, err := json.Marshal(set)
	if err != nil {
		b.Fatal(err)
	}
	file := filepath.Join(b.TempDir(), "jwks.json")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		b.Fatal(err)
	}
	ks := config.Auth{Mode: config.AuthJWT, JWTJWKSFile: file, JWTLeeway: 30 * time.Second, JWTUserClaim: "sub"}
	kv, err := auth.New(b.Context(), ks, quiet)
	if err != nil {
		b.Fatal(err)
	}
	for _, alg := range []struct {
		name, kid string
		method    jwt.SigningMethod
		key       any
	}{{"jwt-rs256", "rs", jwt.SigningMethodRS256, rk}, {"jwt-es256", "es", jwt.SigningMethodES256, ek}} {
		t := jwt.NewWithClaims(alg.method, claims)
		t.Header["kid"] = alg.kid
		tok, err := t.SignedString(alg.key)
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, benchIdentity{alg.name, kv, "Authorization", "Bearer " + tok})
	}
	return out
}
