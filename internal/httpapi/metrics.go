package httpapi

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Every label value of the HTTP metrics comes from a fixed set, whatever a
// client sends: each new value is a series kept for the life of the process
// and shown on every scrape, so a client sending a method, a path or a code
// of its own with each request would grow the server, and the Prometheus
// that scrapes it, without bound.
const (
	// labelOther stands for any method, status or buy outcome outside the
	// known ones.
	labelOther = "other"
	// routeUnmatched is the route of a request no route matched (404, 405).
	routeUnmatched = "unmatched"
)

type httpMetrics struct {
	requests *prometheus.HistogramVec
	buys     *buyOutcomes
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "seckill",
			Subsystem: "http",
			Name:      "request_duration_seconds",
			Help:      "HTTP request latency by method (\"other\" for one the API does not know), route (\"unmatched\" for none) and status.",
			Buckets:   []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"method", "route", "status"}),
		buys: newBuyOutcomes(),
	}
	reg.MustRegister(m.requests, m.buys.vec)
	return m
}

// methodLabel is the method label of a request: the method when it is one
// of HTTP's own, otherwise "other". The constants are returned rather than
// m, so that a label never holds on to the memory of a request.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet:
		return http.MethodGet
	case http.MethodHead:
		return http.MethodHead
	case http.MethodPost:
		return http.MethodPost
	case http.MethodPut:
		return http.MethodPut
	case http.MethodPatch:
		return http.MethodPatch
	case http.MethodDelete:
		return http.MethodDelete
	case http.MethodOptions:
		return http.MethodOptions
	case http.MethodConnect:
		return http.MethodConnect
	case http.MethodTrace:
		return http.MethodTrace
	}
	return labelOther
}

// boundStatus is status when it is a valid HTTP status (100 to 599), and 0,
// which statusLabel shows as "other", for anything else a handler may have
// written.
func boundStatus(status int) int {
	if status < 100 || status > 599 {
		return 0
	}
	return status
}

// statusLabel is the status label of a status boundStatus returned.
func statusLabel(status int) string {
	if status == 0 {
		return labelOther
	}
	return strconv.Itoa(status)
}

// buyOutcomes counts buy requests by outcome: "accepted", the code of the
// error answered, or "other" for a code the API does not list. Its
// counters are made up front, one per outcome, so that counting a buy is a
// map lookup rather than hashing a label, and every outcome shows from the
// start, at 0.
type buyOutcomes struct {
	vec   *prometheus.CounterVec
	known map[string]prometheus.Counter
	other prometheus.Counter
}

func newBuyOutcomes() *buyOutcomes {
	b := &buyOutcomes{
		vec: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "seckill",
			Name:      "buy_requests_total",
			Help:      "Buy requests by outcome: accepted, the error code returned, or other for a code outside the API's.",
		}, []string{"outcome"}),
		known: map[string]prometheus.Counter{},
	}
	for _, o := range buyOutcomeNames() {
		b.known[o] = b.vec.WithLabelValues(o)
	}
	b.other = b.vec.WithLabelValues(labelOther)
	return b
}

// count adds one buy answered with outcome.
func (b *buyOutcomes) count(outcome string) {
	c, ok := b.known[outcome]
	if !ok {
		c = b.other
	}
	c.Inc()
}

// buyOutcomeNames lists the outcomes a buy can have: accepted, and every
// error code of the API, those of the error table included.
func buyOutcomeNames() []string {
	names := []string{"accepted"}
	for _, e := range []*Error{errNotFound, errMethodNotAllowed, errInternal, errBodyTooLarge, errUnauthorized, errAdminDisabled, errPatchType, errStreamsFull} {
		names = append(names, e.Code)
	}
	for _, r := range rules {
		names = append(names, r.to.Code)
	}
	return names
}
