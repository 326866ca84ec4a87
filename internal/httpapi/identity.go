package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/seckill/seckill/internal/order"
)

// TokenVerifier checks a shopper's bearer token and returns the shopper id
// it carries (auth.Verifier in jwt mode).
type TokenVerifier interface {
	Verify(ctx context.Context, token string) (userID string, err error)
}

// shopperHandler serves a request of the shopper whose id it is given.
type shopperHandler func(c *gin.Context, user string)

// shopper returns the wrapper of the shopper's routes: it identifies the
// shopper, with no verifier by the X-User-ID header the gateway sets,
// otherwise only by a bearer token the verifier accepts (the header is then
// ignored), and hands their id to the route's handler. Anything else is 401.
func shopper(tokens TokenVerifier, log *slog.Logger) func(shopperHandler) gin.HandlerFunc {
	if tokens == nil {
		return func(h shopperHandler) gin.HandlerFunc {
			return func(c *gin.Context) {
				id := c.GetHeader("X-User-Id") // X-User-ID in its canonical form: found without a copy
				if !order.ValidUserID(id) {
					if id == "" {
						writeError(c, log, errUnauthorized)
					} else {
						writeError(c, log, errBadUserID)
					}
					return
				}
				h(c, id)
			}
		}
	}
	return func(h shopperHandler) gin.HandlerFunc {
		return func(c *gin.Context) {
			tok, ok := bearer(c.GetHeader("Authorization"))
			if !ok {
				writeError(c, log, errNoToken)
				return
			}
			id, err := tokens.Verify(c.Request.Context(), tok)
			if err != nil {
				writeError(c, log, err)
				return
			}
			if !order.ValidUserID(id) {
				writeError(c, log, errTokenUser)
				return
			}
			h(c, id)
		}
	}
}

// bearer returns the credentials of an Authorization header of the Bearer
// scheme (whose name is case-insensitive).
func bearer(header string) (string, bool) {
	const scheme = "Bearer "
	if len(header) <= len(scheme) || !strings.EqualFold(header[:len(scheme)], scheme) {
		return "", false
	}
	return header[len(scheme):], true
}

// adminOnly lets through requests bearing the admin token, compared in
// constant time. With no token the admin API is off.
func adminOnly(token string, log *slog.Logger) gin.HandlerFunc {
	want := sha256.Sum256([]byte(token))
	return func(c *gin.Context) {
		if token == "" {
			writeError(c, log, errAdminDisabled)
			return
		}
		got, ok := bearer(c.GetHeader("Authorization"))
		if !ok || !sameSecret(got, want) {
			writeError(c, log, errAdminToken)
			return
		}
		c.Next()
	}
}

// sameSecret reports whether got hashes to want, in a time that tells
// nothing of either, their lengths included (ConstantTimeCompare returns
// at once on a length that differs): both sides are SHA-256 sums.
func sameSecret(got string, want [sha256.Size]byte) bool {
	sum := sha256.Sum256([]byte(got))
	return subtle.ConstantTimeCompare(sum[:], want[:]) == 1
}
