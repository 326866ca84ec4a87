package drain

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the drain's Prometheus collectors. A nil *Metrics records
// nothing.
type Metrics struct {
	persisted     prometheus.Counter
	guardRefusals prometheus.Counter
	lag           prometheus.Histogram
	batch         prometheus.Histogram
	dbRetries     prometheus.Counter
}

// NewMetrics returns the collectors, registered on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		persisted: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "seckill", Subsystem: "drain", Name: "orders_persisted_total",
			Help: "Orders written to SQL by the drain.",
		}),
		guardRefusals: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "seckill", Subsystem: "drain", Name: "guard_refusals_total",
			Help: "Orders the SQL stock guard refused (sold would exceed stock_total); never expected.",
		}),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "seckill", Subsystem: "drain", Name: "lag_seconds",
			Help:    "Time from an order's acceptance to its commit in SQL.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}),
		batch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "seckill", Subsystem: "drain", Name: "batch_size",
			Help:    "Orders per drain transaction.",
			Buckets: []float64{1, 2, 5, 10, 25, 50, 100, 250, 500, 1000},
		}),
		dbRetries: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "seckill", Subsystem: "drain", Name: "sql_retries_total",
			Help: "Drain transactions retried because SQL was unavailable.",
		}),
	}
	reg.MustRegister(m.persisted, m.guardRefusals, m.lag, m.batch, m.dbRetries)
	return m
}

func (m *Metrics) drained(n int, refused int, created []time.Time, now time.Time) {
	if m == nil {
		return
	}
	m.persisted.Add(float64(n))
	m.guardRefusals.Add(float64(refused))
	m.batch.Observe(float64(n + refused))
	for _, c := range created {
		m.lag.Observe(now.Sub(c).Seconds())
	}
}

func (m *Metrics) retried() {
	if m != nil {
		m.dbRetries.Inc()
	}
}
