// Package auth verifies the JSON Web Tokens shoppers present in jwt mode
// (auth.mode: jwt): HS256 with a shared secret, or RS256/ES256 with public
// keys from a JWK Set (a URL, fetched and cached, or a file).
//
// Only the configured family of algorithms is accepted, so "none" and
// HS/RS confusion are refused; exp is required, nbf honoured, both with
// auth.jwt_leeway; iss and aud are checked when configured. Verification
// never waits on the network except for a token whose kid is unknown, which
// waits at most KeyWait for one fetch of the key set (a fetch starts at most
// every MinRefetch).
//
// Every refusal is an *Error with a stable text, which the HTTP layer answers
// as 401 unauthorized.
package auth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/seckill/seckill/internal/config"
)

// MaxTokenBytes is the longest token looked at; a longer one is refused
// before it is parsed.
const MaxTokenBytes = 8 << 10

// Error is a token refused; Detail is stable and safe to show the client.
type Error struct{ Detail string }

func (e *Error) Error() string { return e.Detail }

// Why a token is refused.
var (
	ErrTooLarge     = &Error{"token larger than 8 KiB"}
	ErrMalformed    = &Error{"malformed token"}
	ErrSignature    = &Error{"token signature not valid, or algorithm not accepted"}
	ErrUnknownKey   = &Error{"token signed by an unknown key (kid)"}
	ErrExpired      = &Error{"token expired"}
	ErrNotYetValid  = &Error{"token not valid yet (nbf)"}
	ErrMissingClaim = &Error{"token lacks a required claim (exp, or iss and aud when configured)"}
	ErrIssuer       = &Error{"token issuer not accepted"}
	ErrAudience     = &Error{"token audience not accepted"}
	ErrNoUser       = &Error{"token has no shopper id in its user claim"}
)

// Verifier checks shoppers' tokens. It is safe for concurrent use.
type Verifier struct {
	keys      *keySet // nil with an HS256 secret
	parser    *jwt.Parser
	keyFunc   func(ctx context.Context) jwt.Keyfunc
	userClaim string
	leeway    time.Duration
	cache     *cache
	now       func() time.Time
}

// New returns the Verifier the configuration describes (auth.mode must be
// jwt). A JWK Set URL is fetched once before New returns (a failure is logged
// and retried in the background, tokens are refused meanwhile) and then every
// auth.jwt_jwks_refresh until Close; a JWK Set file must be readable.
func New(ctx context.Context, cfg config.Auth, log *slog.Logger) (*Verifier, error) {
	v := &Verifier{userClaim: cfg.JWTUserClaim, leeway: cfg.JWTLeeway, cache: newCache(), now: time.Now}
	opts := []jwt.ParserOption{
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(cfg.JWTLeeway),
		jwt.WithTimeFunc(func() time.Time { return v.now() }),
	}
	if cfg.JWTIssuer != "" {
		opts = append(opts, jwt.WithIssuer(cfg.JWTIssuer))
	}
	if cfg.JWTAudience != "" {
		opts = append(opts, jwt.WithAudience(cfg.JWTAudience))
	}
	switch {
	case cfg.JWTSecret != "":
		secret := []byte(cfg.JWTSecret)
		opts = append(opts, jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}))
		v.keyFunc = func(context.Context) jwt.Keyfunc {
			return func(*jwt.Token) (any, error) { return secret, nil }
		}
	case cfg.JWTJWKSURL != "" || cfg.JWTJWKSFile != "":
		ks, err := newKeySet(ctx, cfg, log)
		if err != nil {
			return nil, err
		}
		opts = append(opts, jwt.WithValidMethods([]string{jwt.SigningMethodRS256.Alg(), jwt.SigningMethodES256.Alg()}))
		v.keys, v.keyFunc = ks, ks.keyFunc
	default:
		return nil, errors.New("auth: no JWT key configured")
	}
	v.parser = jwt.NewParser(opts...)
	return v, nil
}

// Close stops the key set's refreshes and waits for them.
func (v *Verifier) Close() {
	if v.keys != nil {
		v.keys.Close()
	}
}

// Verify checks token (without "Bearer ") and returns the shopper id in its
// user claim. Every refusal is one of this package's *Error values. A token
// accepted in the last minute is answered from memory until its exp (plus
// leeway), as long as the key set has not been fetched again since.
func (v *Verifier) Verify(ctx context.Context, token string) (string, error) {
	if len(token) > MaxTokenBytes {
		return "", ErrTooLarge
	}
	sum := sha256.Sum256([]byte(token))
	var keys any
	if v.keys != nil {
		keys = v.keys.keys.Load()
	}
	now := v.now()
	if user, ok := v.cache.get(sum, keys, now); ok {
		return user, nil
	}
	claims := jwt.MapClaims{}
	if _, err := v.parser.ParseWithClaims(token, claims, v.keyFunc(ctx)); err != nil {
		return "", refusal(err)
	}
	user, _ := claims[v.userClaim].(string)
	if user == "" {
		return "", ErrNoUser
	}
	if exp, err := claims.GetExpirationTime(); err == nil && exp != nil {
		until := exp.Add(v.leeway)
		if limit := now.Add(cacheAge); until.After(limit) {
			until = limit
		}
		v.cache.put(sum, verified{user: user, until: until, keys: keys})
	}
	return user, nil
}

// refusal maps the jwt package's errors to the stable ones.
func refusal(err error) error {
	switch {
	case errors.Is(err, ErrUnknownKey):
		return ErrUnknownKey
	case errors.Is(err, jwt.ErrTokenMalformed):
		return ErrMalformed
	case errors.Is(err, jwt.ErrTokenSignatureInvalid), errors.Is(err, jwt.ErrTokenUnverifiable):
		return ErrSignature
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return ErrMissingClaim
	case errors.Is(err, jwt.ErrTokenExpired):
		return ErrExpired
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return ErrNotYetValid
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return ErrIssuer
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return ErrAudience
	}
	return ErrMalformed // e.g. a claim of the wrong type
}

// Mint returns an HS256 token for user signed with cfg's jwt_secret, valid
// for ttl from now, carrying iss and aud when configured: what `seckill
// token` prints for load tests and trials. Production tokens come from the
// shop's identity service.
func Mint(cfg config.Auth, user string, ttl time.Duration, now time.Time) (string, error) {
	if cfg.JWTSecret == "" {
		return "", errors.New("auth: minting needs auth.jwt_secret (SECKILL_AUTH_JWT_SECRET)")
	}
	claims := jwt.MapClaims{
		cfg.JWTUserClaim: user,
		"iat":            now.Unix(),
		"exp":            now.Add(ttl).Unix(),
	}
	if cfg.JWTIssuer != "" {
		claims["iss"] = cfg.JWTIssuer
	}
	if cfg.JWTAudience != "" {
		claims["aud"] = cfg.JWTAudience
	}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(cfg.JWTSecret))
	if err != nil {
		return "", fmt.Errorf("auth: sign: %w", err)
	}
	return tok, nil
}
