package order

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the order lifecycle's Prometheus collectors. A nil *Metrics
// records nothing.
type Metrics struct {
	lifecycle *prometheus.CounterVec
	payments  *prometheus.CounterVec
	calls     *prometheus.CounterVec
}

// NewMetrics returns the collectors, registered on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		lifecycle: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "seckill", Subsystem: "orders", Name: "transitions_total",
			Help: "Orders paid, cancelled or expired.",
		}, []string{"status"}),
		payments: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "seckill", Subsystem: "payments", Name: "notifications_total",
			Help: "Payment notifications by outcome (applied, refund_due, mismatch, replay) and reason.",
		}, []string{"outcome", "reason"}),
	}
	m.calls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "seckill", Subsystem: "payments", Name: "provider_calls_total",
		Help: "Calls to the payment provider's API (payment.mode stripe) by call (open, void, refund) and outcome (ok, refused, error).",
	}, []string{"call", "outcome"})
	reg.MustRegister(m.lifecycle, m.payments, m.calls)
	return m
}

func (m *Metrics) paid() {
	if m != nil {
		m.lifecycle.WithLabelValues(StatusPaid).Inc()
	}
}

func (m *Metrics) closed(status string) {
	if m != nil {
		m.lifecycle.WithLabelValues(status).Inc()
	}
}

// payment counts a notification's outcome; both labels are from fixed sets
// (the outcomes, and the reasons and order statuses).
func (m *Metrics) payment(outcome, reason string) {
	if m != nil {
		m.payments.WithLabelValues(outcome, reason).Inc()
	}
}

// provider counts a call to the payment provider and how it ended.
func (m *Metrics) provider(call string, err error) {
	if m == nil {
		return
	}
	outcome := "ok"
	var refused *RefusedError
	switch {
	case errors.As(err, &refused):
		outcome = "refused"
	case err != nil:
		outcome = "error"
	}
	m.calls.WithLabelValues(call, outcome).Inc()
}
