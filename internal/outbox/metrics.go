package outbox

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the dispatcher's: seckill_events_*. A nil *Metrics records
// nothing.
type Metrics struct {
	delivers, retries, deads *prometheus.CounterVec
	deletes                  prometheus.Counter
	pending, deadNow, oldest prometheus.Gauge
}

// NewMetrics registers the events metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "seckill", Subsystem: "events", Name: name, Help: help}, []string{"type"})
	}
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "seckill", Subsystem: "events", Name: name, Help: help})
	}
	m := &Metrics{
		delivers: counter("delivered_total", "Events acknowledged by every sink, by event type."),
		retries:  counter("retried_total", "Deliveries refused or timed out, to be tried again, by event type."),
		deads:    counter("dead_total", "Events that became dead letters (refused past events.max_age), by event type."),
		deletes: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "seckill", Subsystem: "events", Name: "deleted_total",
			Help: "Delivered events deleted after events.retention."}),
		pending: gauge("pending", "Events not yet delivered (all instances; refreshed every 5s)."),
		deadNow: gauge("dead", "Dead letters kept in the outbox (all instances; refreshed every 5s)."),
		oldest:  gauge("oldest_pending_age_seconds", "Age of the oldest event not yet delivered; 0 when none."),
	}
	for _, t := range Types {
		// Every series exists from the start: a rate over a fresh counter works.
		m.delivers.WithLabelValues(t)
		m.retries.WithLabelValues(t)
		m.deads.WithLabelValues(t)
	}
	reg.MustRegister(m.delivers, m.retries, m.deads, m.deletes, m.pending, m.deadNow, m.oldest)
	return m
}

func (m *Metrics) delivered(typ string) {
	if m != nil {
		m.delivers.WithLabelValues(typ).Inc()
	}
}

func (m *Metrics) retried(typ string) {
	if m != nil {
		m.retries.WithLabelValues(typ).Inc()
	}
}

func (m *Metrics) dead(typ string) {
	if m != nil {
		m.deads.WithLabelValues(typ).Inc()
	}
}

func (m *Metrics) deleted(n int) {
	if m != nil {
		m.deletes.Add(float64(n))
	}
}

func (m *Metrics) backlog(c Counts) {
	if m != nil {
		m.pending.Set(float64(c.Pending))
		m.deadNow.Set(float64(c.Dead))
		m.oldest.Set(c.OldestPending.Seconds())
	}
}
