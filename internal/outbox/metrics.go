package outbox

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the dispatcher's: seckill_events_*, by receiver (a sink's
// name, from the configuration: a bounded set). A nil *Metrics records
// nothing.
type Metrics struct {
	delivers, retries, deads *prometheus.CounterVec
	deletes                  prometheus.Counter
	pending, deadNow, oldest *prometheus.GaugeVec
}

// NewMetrics registers the events metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "seckill", Subsystem: "events", Name: name, Help: help},
			[]string{"receiver", "type"})
	}
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "seckill", Subsystem: "events", Name: name, Help: help},
			[]string{"receiver"})
	}
	m := &Metrics{
		delivers: counter("delivered_total", "Events acknowledged by the receiver, by receiver and event type."),
		retries:  counter("retried_total", "Deliveries refused or timed out, to be tried again, by receiver and event type."),
		deads:    counter("dead_total", "Deliveries that became dead letters (refused past events.max_age), by receiver and event type."),
		deletes: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "seckill", Subsystem: "events", Name: "deleted_total",
			Help: "Events deleted after events.retention, once delivered to every receiver."}),
		pending: gauge("pending", "Events not yet delivered to the receiver (all instances; refreshed every 5s)."),
		deadNow: gauge("dead", "Dead letters of the receiver kept in the outbox (all instances; refreshed every 5s)."),
		oldest:  gauge("oldest_pending_age_seconds", "Age of the oldest event not yet delivered to the receiver; 0 when none."),
	}
	reg.MustRegister(m.delivers, m.retries, m.deads, m.deletes, m.pending, m.deadNow, m.oldest)
	return m
}

// receivers makes every series of each receiver in names, so that a rate
// over a fresh counter works.
func (m *Metrics) receivers(names []string) {
	if m == nil {
		return
	}
	for _, r := range names {
		for _, t := range Types {
			m.delivers.WithLabelValues(r, t)
			m.retries.WithLabelValues(r, t)
			m.deads.WithLabelValues(r, t)
		}
		m.pending.WithLabelValues(r)
		m.deadNow.WithLabelValues(r)
		m.oldest.WithLabelValues(r)
	}
}

func (m *Metrics) delivered(receiver, typ string) {
	if m != nil {
		m.delivers.WithLabelValues(receiver, typ).Inc()
	}
}

func (m *Metrics) retried(receiver, typ string) {
	if m != nil {
		m.retries.WithLabelValues(receiver, typ).Inc()
	}
}

func (m *Metrics) dead(receiver, typ string) {
	if m != nil {
		m.deads.WithLabelValues(receiver, typ).Inc()
	}
}

func (m *Metrics) deleted(n int) {
	if m != nil {
		m.deletes.Add(float64(n))
	}
}

func (m *Metrics) backlog(receiver string, c Counts) {
	if m != nil {
		m.pending.WithLabelValues(receiver).Set(float64(c.Pending))
		m.deadNow.WithLabelValues(receiver).Set(float64(c.Dead))
		m.oldest.WithLabelValues(receiver).Set(c.OldestPending.Seconds())
	}
}
