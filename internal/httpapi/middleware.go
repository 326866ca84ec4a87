package httpapi

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
)

// requestID takes X-Request-ID from the client when it is sane, makes one
// otherwise, and echoes it in the response (requestIDOf reads it there).
func requestID() gin.HandlerFunc {
	return func(c *gin.Context) {
		// X-Request-ID in its canonical form, so neither call copies the name.
		id := c.GetHeader("X-Request-Id")
		if !saneID(id) {
			var b [8]byte
			_, _ = rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		c.Header("X-Request-Id", id)
		c.Next()
	}
}

// requestIDOf is the request's id, as requestID set it on the response.
func requestIDOf(c *gin.Context) string { return c.Writer.Header().Get("X-Request-Id") }

func saneID(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// accessLog writes one structured line per request at debug level, and at
// warn/error level for 4xx/5xx answers other than the expected sale outcomes.
func accessLog(log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		status := c.Writer.Status()
		level := slog.LevelDebug
		if status >= 500 {
			level = slog.LevelError
		}
		if !log.Enabled(c.Request.Context(), level) {
			return
		}
		log.LogAttrs(c.Request.Context(), level, "http",
			slog.String("request_id", requestIDOf(c)),
			// The method as the metrics label it: a client's own method
			// would put what it likes, up to the header limit, in the log.
			slog.String("method", methodLabel(c.Request.Method)),
			slog.String("route", c.FullPath()),
			slog.Int("status", status),
			slog.Duration("took", time.Since(start)),
			slog.String("client", c.ClientIP()),
		)
	}
}

// recovery turns a panic into a logged 500 with the standard error body.
func recovery(log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		defer func() {
			if r := recover(); r != nil {
				if err, ok := r.(error); ok && errors.Is(err, http.ErrAbortHandler) {
					panic(r)
				}
				writeError(c, log, fmt.Errorf("panic: %v", r))
			}
		}()
		c.Next()
	}
}

// limitBody caps request bodies; reading past the cap fails and the handler
// answers 413.
func limitBody(limit int64) gin.HandlerFunc {
	return func(c *gin.Context) {
		if c.Request.ContentLength > limit {
			writeError(c, slog.Default(), errBodyTooLarge)
			return
		}
		c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, limit)
		c.Next()
	}
}

// observe records request latency and status by route. The histogram of
// each method, route and status is looked up once and kept (up to
// maxObservers of them), instead of hashing three labels per request. The
// key holds the labels, not what the client sent, so the set of observers
// and of series is bounded whatever the requests are (metrics.go).
func observe(m *httpMetrics) gin.HandlerFunc {
	type key struct {
		method, route string
		status        int
	}
	const maxObservers = 1024
	var mu sync.RWMutex
	observers := map[key]prometheus.Observer{}
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		route := c.FullPath() // a pattern of routes.go
		if route == "" {
			route = routeUnmatched
		}
		k := key{methodLabel(c.Request.Method), route, boundStatus(c.Writer.Status())}
		mu.RLock()
		o, ok := observers[k]
		mu.RUnlock()
		if !ok {
			o = m.requests.WithLabelValues(k.method, k.route, statusLabel(k.status))
			mu.Lock()
			if len(observers) < maxObservers {
				observers[k] = o
			}
			mu.Unlock()
		}
		o.Observe(time.Since(start).Seconds())
	}
}

// cors answers preflights and sets Access-Control-Allow-Origin for the listed
// origins only. With no origins configured it is not installed at all.
func cors(origins []string) gin.HandlerFunc {
	allowed := map[string]bool{}
	for _, o := range origins {
		allowed[o] = true
	}
	return func(c *gin.Context) {
		origin := c.GetHeader("Origin")
		if origin != "" && (allowed["*"] || allowed[origin]) {
			c.Header("Access-Control-Allow-Origin", origin)
			c.Header("Vary", "Origin")
			c.Header("Access-Control-Allow-Headers", "Authorization, Content-Type, X-User-ID, X-Request-ID")
			c.Header("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE, OPTIONS")
			if c.Request.Method == http.MethodOptions {
				c.AbortWithStatus(http.StatusNoContent)
				return
			}
		}
		c.Next()
	}
}
