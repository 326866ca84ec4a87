package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
)

// handleHealthz is the liveness probe: the process serves requests.
func handleHealthz(mode, version string) gin.HandlerFunc {
	return func(c *gin.Context) {
		c.JSON(http.StatusOK, gin.H{"status": "ok", "mode": mode, "embedded": mode == "embedded", "version": version})
	}
}

// handleReadyz is the readiness probe: Redis and SQL answer and the schema is
// current. It answers 503 with the reason otherwise.
func handleReadyz(ready func(context.Context) error, log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		if ready != nil {
			ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
			defer cancel()
			if err := ready(ctx); err != nil {
				log.WarnContext(ctx, "not ready", "err", err.Error())
				c.JSON(http.StatusServiceUnavailable, gin.H{"status": "unavailable", "error": "not_ready", "detail": err.Error()})
				return
			}
		}
		c.JSON(http.StatusOK, gin.H{"status": "ready"})
	}
}
