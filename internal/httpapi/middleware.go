package httpapi

import (
	"context"
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

// accessLog writes one structured line per request, at the level
// answerLevel gives it.
func accessLog(log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		status := outcome(c)
		level := answerLevel(c, status)
		if !log.Enabled(c.Request.Context(), level) {
			return
		}
		msg := "http"
		if status == statusClientClosed {
			msg = "client closed request"
		}
		log.LogAttrs(c.Request.Context(), level, msg,
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

// statusClientClosed is the status the log and the metrics give a request
// whose client went away before its answer (as nginx's 499): no answer
// reached anyone, and nothing failed on the server's side.
const statusClientClosed = 499

// answerKey holds, in the gin context, the *Error a 5xx answer was
// (writeAnswer).
const answerKey = "httpapi.answer"

// clientGone reports whether the client of c went away: its request's
// context was cancelled (the connection closed, the HTTP/2 stream reset).
func clientGone(c *gin.Context) bool {
	return errors.Is(c.Request.Context().Err(), context.Canceled)
}

// outcome is the status a request is logged and counted under: the one
// answered, or statusClientClosed when the client went away before an
// answer other than a failure was written.
func outcome(c *gin.Context) int {
	status := c.Writer.Status()
	if (status >= 500 || !c.Writer.Written()) && clientGone(c) {
		return statusClientClosed
	}
	return status
}

// answerLevel is the level of a request's line in the log. ERROR is for
// what an operator must look at: an internal error, a store the service
// cannot reach. A client that went away is INFO; any 4xx, and the 5xx the
// service gives by design (busy, order_queued), DEBUG; another 5xx that
// the API's error table did not write (the readiness probe's, the
// console's refusals) WARN.
func answerLevel(c *gin.Context, status int) slog.Level {
	switch {
	case status == statusClientClosed:
		return slog.LevelInfo
	case status < 500:
		return slog.LevelDebug
	}
	if v, ok := c.Get(answerKey); ok {
		if v.(*Error).expected {
			return slog.LevelDebug
		}
		return slog.LevelError
	}
	if status == http.StatusInternalServerError {
		return slog.LevelError
	}
	return slog.LevelWarn
}

// recovery turns a panic into a logged 500 with the standard error body.
func recovery(log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		defer func() {
			if r := recover(); r != nil {
				if err, ok := r.(error); ok && errors.Is(err, http.ErrAbortHandler) {
					panic(r)
				}
				// Logged whether or not the client is still there.
				writeAnswer(c, log, fmt.Errorf("panic: %v", r), errInternal)
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
		k := key{methodLabel(c.Request.Method), route, boundStatus(outcome(c))}
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
			c.Header("Access-Control-Allow-Headers", "Authorization, Content-Type, X-User-ID, X-Request-ID, Seckill-PoW")
			c.Header("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE, OPTIONS")
			if c.Request.Method == http.MethodOptions {
				c.AbortWithStatus(http.StatusNoContent)
				return
			}
		}
		c.Next()
	}
}
