package httpapi

import (
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
