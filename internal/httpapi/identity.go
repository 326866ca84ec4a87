package httpapi

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"log/slog"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/seckill/seckill/internal/order"
)

const userKey = "user"

// shopper identifies the shopper: by the X-User-ID header the gateway sets,
// or, when secret is configured, only by a bearer token
// "<user-id>.<hex HMAC-SHA256(secret, user-id)>". Anything else is 401.
func shopper(secret string, log *slog.Logger) gin.HandlerFunc {
	key := []byte(secret)
	return func(c *gin.Context) {
		if secret == "" {
			id := c.GetHeader("X-User-Id") // X-User-ID in its canonical form: found without a copy
			if !order.ValidUserID(id) {
				writeError(c, log, errUnauthorized)
				return
			}
			c.Set(userKey, id)
			c.Next()
			return
		}
		id, ok := verifyUserToken(key, c.GetHeader("Authorization"))
		if !ok {
			writeError(c, log, errBadToken)
			return
		}
		c.Set(userKey, id)
		c.Next()
	}
}

func verifyUserToken(key []byte, header string) (string, bool) {
	tok, ok := strings.CutPrefix(header, "Bearer ")
	if !ok {
		return "", false
	}
	i := strings.LastIndexByte(tok, '.')
	if i <= 0 {
		return "", false
	}
	id, sig := tok[:i], tok[i+1:]
	if !order.ValidUserID(id) {
		return "", false
	}
	got, err := hex.DecodeString(sig)
	if err != nil {
		return "", false
	}
	return id, hmac.Equal(got, UserTokenMAC(key, id))
}

// UserTokenMAC is the HMAC-SHA256 of a user id under the configured secret;
// a gateway issues "<user-id>.<hex of it>" as the shopper's bearer token.
func UserTokenMAC(secret []byte, userID string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(userID))
	return m.Sum(nil)
}

// adminOnly lets through requests bearing the admin token, compared in
// constant time. With no token the admin API is off.
func adminOnly(token string, log *slog.Logger) gin.HandlerFunc {
	want := []byte(token)
	return func(c *gin.Context) {
		if token == "" {
			writeError(c, log, errAdminDisabled)
			return
		}
		got, ok := strings.CutPrefix(c.GetHeader("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), want) != 1 {
			writeError(c, log, errAdminToken)
			return
		}
		c.Next()
	}
}

func userOf(c *gin.Context) string { return c.GetString(userKey) }
