package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
)

type httpMetrics struct {
	requests *prometheus.HistogramVec
	buys     *prometheus.CounterVec
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "seckill",
			Subsystem: "http",
			Name:      "request_duration_seconds",
			Help:      "HTTP request latency by method, route and status.",
			Buckets:   []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"method", "route", "status"}),
		buys: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "seckill",
			Name:      "buy_requests_total",
			Help:      "Buy requests by outcome: accepted, or the error code returned.",
		}, []string{"outcome"}),
	}
	reg.MustRegister(m.requests, m.buys)
	return m
}

// countRateLimited counts a buy the rate limiter refused as outcome
// rate_limited, so seckill_buy_requests_total shows every answer a buyer got
// past identification. Only the limiter answers 429 on the buy route.
func countRateLimited(outcomes *prometheus.CounterVec) gin.HandlerFunc {
	limited := outcomes.WithLabelValues("rate_limited")
	return func(c *gin.Context) {
		c.Next()
		if c.Writer.Status() == http.StatusTooManyRequests {
			limited.Inc()
		}
	}
}
