package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/seckill/seckill/api"
)

// handleOpenAPI serves api/openapi.yaml as JSON, converted once.
func handleOpenAPI(log *slog.Logger) gin.HandlerFunc {
	doc, err := api.JSON()
	if err != nil {
		log.Error("openapi document not served", "err", err.Error())
	}
	return func(c *gin.Context) {
		if err != nil {
			writeError(c, log, err)
			return
		}
		c.Data(http.StatusOK, "application/json; charset=utf-8", doc)
	}
}

// handleFrontDoor sends a browser that opens the server's root to the
// admin console when it is on, to the API reference otherwise.
func handleFrontDoor(consoleOn bool) gin.HandlerFunc {
	to := "/docs"
	if consoleOn {
		to = "/console"
	}
	return func(c *gin.Context) { c.Redirect(http.StatusFound, to) }
}

// handleHealthz is the liveness probe: the process serves requests.
func handleHealthz(mode, version string) gin.HandlerFunc {
	return func(c *gin.Context) {
		c.JSON(http.StatusOK, gin.H{"status": "ok", "mode": mode, "embedded": mode == "embedded", "version": version})
	}
}

// ReadyReport is what /readyz shows besides ready or not: facts that do not
// make an instance unready but that an operator must see.
type ReadyReport struct {
	// RedisMaxmemoryPolicy is Redis's maxmemory-policy ("noeviction", or
	// one that may evict keys), "unknown" when Redis does not let it be
	// read, empty for the embedded Redis.
	RedisMaxmemoryPolicy string
	// Warnings say what is wrong and how to fix it.
	Warnings []string
}

// handleReadyz is the readiness probe: Redis and SQL answer and the schema is
// current. It answers 503 with the reason otherwise. report's warnings are
// shown either way and never make the instance unready: they are settings
// to fix, and failing every instance's probe for them would stop the sale.
func handleReadyz(ready func(context.Context) error, report func(context.Context) ReadyReport, log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
		defer cancel()
		status, body := http.StatusOK, gin.H{"status": "ready"}
		if ready != nil {
			if err := ready(ctx); err != nil {
				if !clientGone(c) { // not a probe that gave up waiting
					log.WarnContext(ctx, "not ready", "err", err.Error())
				}
				status = http.StatusServiceUnavailable
				body = gin.H{"status": "unavailable", "error": "not_ready", "detail": err.Error()}
			}
		}
		if report != nil {
			r := report(ctx)
			if r.RedisMaxmemoryPolicy != "" {
				body["redis_maxmemory_policy"] = r.RedisMaxmemoryPolicy
			}
			if len(r.Warnings) > 0 {
				body["warnings"] = r.Warnings
			}
		}
		c.JSON(status, body)
	}
}
