package order

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the order lifecycle's Prometheus collectors. A nil *Metrics
// records nothing.
type Metrics struct {
	lifecycle *prometheus.CounterVec
	payments  *prometheus.CounterVec
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
	reg.MustRegister(m.lifecycle, m.payments)
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
