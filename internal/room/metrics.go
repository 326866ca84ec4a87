package room

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics count what the waiting rooms do, per SKU (a SKU with a room is
// made by an admin: the label is bounded). A nil *Metrics counts nothing.
type Metrics struct {
	joined, admitted, expired *prometheus.CounterVec
	waiting, rate             *prometheus.GaugeVec
}

// NewMetrics registers the room metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		joined: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "seckill_room_joined_total",
			Help: "Tickets issued by a SKU's waiting room."}, []string{"sku"}),
		admitted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "seckill_room_admitted_total",
			Help: "Tickets admitted (given a pass) by a SKU's waiting room."}, []string{"sku"}),
		expired: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "seckill_room_passes_expired_total",
			Help: "Passes that expired unused, their slots given to the next tickets."}, []string{"sku"}),
		waiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "seckill_room_queue_length",
			Help: "Tickets waiting in a SKU's room, as last seen by this instance."}, []string{"sku"}),
		rate: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "seckill_room_admit_rate",
			Help: "Admissions per second of a SKU's room."}, []string{"sku"}),
	}
	reg.MustRegister(m.joined, m.admitted, m.expired, m.waiting, m.rate)
	return m
}

// visit records one run of the room script: the tickets it issued and
// admitted, the passes it found expired, and the line it left.
func (m *Metrics) visit(sku uint64, issued, admitted, expired, waiting int64, rate float64) {
	if m == nil {
		return
	}
	l := strconv.FormatUint(sku, 10)
	m.joined.WithLabelValues(l).Add(float64(issued))
	m.admitted.WithLabelValues(l).Add(float64(admitted))
	m.expired.WithLabelValues(l).Add(float64(expired))
	m.waiting.WithLabelValues(l).Set(float64(waiting))
	m.rate.WithLabelValues(l).Set(rate)
}

// issue records a ticket issued outside the room script (a priority
// code's).
func (m *Metrics) issue(sku uint64) {
	if m == nil {
		return
	}
	m.joined.WithLabelValues(strconv.FormatUint(sku, 10)).Inc()
}
