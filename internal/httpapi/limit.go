package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
)

var errRateLimited = errors.New("too many requests")

// Limiter is a rate budget per key.
type Limiter interface {
	Allow(ctx context.Context, key string) (ok bool, retryAfter time.Duration, err error)
}

// rateLimit refuses with 429 and Retry-After a shopper or client address
// whose budget is spent. A limiter that fails lets the request through: the
// sale must not stop because the limiter could not count.
func rateLimit(perUser, perIP Limiter, log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		for i, lim := range [2]Limiter{perIP, perUser} {
			if lim == nil {
				continue
			}
			key := "ip:" + c.ClientIP()
			if i == 1 {
				key = "user:" + userOf(c)
			}
			ok, wait, err := lim.Allow(c.Request.Context(), key)
			if err != nil {
				log.WarnContext(c.Request.Context(), "rate limiter unavailable; letting the request through", "err", err.Error())
				continue
			}
			if !ok {
				secs := max(1, int(math.Ceil(wait.Seconds())))
				c.Header("Retry-After", strconv.Itoa(secs))
				writeError(c, log, fmt.Errorf("%w: retry in %ds", errRateLimited, secs))
				return
			}
		}
		c.Next()
	}
}
