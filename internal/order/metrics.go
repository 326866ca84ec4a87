package order

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the order lifecycle's Prometheus collectors. A nil *Metrics
// records nothing.
type Metrics struct {
	lifecycle *prometheus.CounterVec
}

// NewMetrics returns the collectors, registered on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		lifecycle: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "seckill", Subsystem: "orders", Name: "transitions_total",
			Help: "Orders paid, cancelled or expired.",
		}, []string{"status"}),
	}
	reg.MustRegister(m.lifecycle)
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
