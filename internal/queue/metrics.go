package queue

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

type counter int

const (
	cEnqueued counter = iota
	cClaimed
	cAcked
	cRetried
	cDead
	cRecovered
	cTrimmed
	nCounters
)

var counterNames = [nCounters][2]string{
	{"enqueued_total", "Tasks added (duplicates not counted; enqueues composed into other scripts not counted)."},
	{"claimed_total", "Task deliveries to consumers."},
	{"acked_total", "Tasks acknowledged and deleted."},
	{"retried_total", "Failed attempts scheduled for a retry."},
	{"dead_lettered_total", "Tasks moved to the dead-letter set."},
	{"recovered_total", "Tasks whose lease expired, returned to ready."},
	{"dead_trimmed_total", "Dead letters deleted by the dead-letter cap."},
}

// Metrics is a prometheus.Collector for queues: counters, labelled by queue,
// updated by every Queue built with Options.Metrics set to it, and depth and
// age gauges read from Redis on scrape for the queues passed to Watch.
// Register it once: prometheus.MustRegister(m). A nil *Metrics is valid and
// records nothing.
//
// Names, with namespace ns:
//
//	ns_queue_enqueued_total{queue}          ns_queue_claimed_total{queue}
//	ns_queue_acked_total{queue}             ns_queue_retried_total{queue}
//	ns_queue_dead_lettered_total{queue}     ns_queue_recovered_total{queue}
//	ns_queue_dead_trimmed_total{queue}
//	ns_queue_depth{queue,state}             state: due, delayed, inflight, dead
//	ns_queue_oldest_due_age_seconds{queue}  age of the oldest claimable task (0: none)
type Metrics struct {
	counters [nCounters]*prometheus.CounterVec
	depth    *prometheus.Desc
	age      *prometheus.Desc
	errors   prometheus.Counter

	mu     sync.Mutex
	queues []*Queue
}

// NewMetrics returns the collectors under namespace (may be empty).
func NewMetrics(namespace string) *Metrics {
	m := &Metrics{
		depth: prometheus.NewDesc(prometheus.BuildFQName(namespace, "queue", "depth"),
			"Tasks in the queue by state, read from Redis on scrape.", []string{"queue", "state"}, nil),
		age: prometheus.NewDesc(prometheus.BuildFQName(namespace, "queue", "oldest_due_age_seconds"),
			"Seconds since the oldest claimable task became due (0: none due).", []string{"queue"}, nil),
		errors: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Subsystem: "queue",
			Name: "scrape_errors_total", Help: "Failed depth reads during scrapes."}),
	}
	for i, n := range counterNames {
		m.counters[i] = prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "queue", Name: n[0], Help: n[1],
		}, []string{"queue"})
	}
	return m
}

// Watch adds queues whose depths and oldest-due age are read on each scrape.
func (m *Metrics) Watch(qs ...*Queue) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.queues = append(m.queues, qs...)
}

// Unwatch stops reading q's depths and drops its counters (its work is
// over), so a process that serves one sale after another keeps a bounded
// set of series.
func (m *Metrics) Unwatch(q *Queue) {
	m.mu.Lock()
	defer m.mu.Unlock()
	kept := m.queues[:0]
	for _, w := range m.queues {
		if w.Name() != q.Name() {
			kept = append(kept, w)
		}
	}
	clear(m.queues[len(kept):])
	m.queues = kept
	for _, c := range m.counters {
		c.DeleteLabelValues(q.Name())
	}
}

func (m *Metrics) add(c counter, queue string, n int) {
	if m == nil || n <= 0 {
		return
	}
	m.counters[c].WithLabelValues(queue).Add(float64(n))
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.counters {
		c.Describe(ch)
	}
	ch <- m.depth
	ch <- m.age
	m.errors.Describe(ch)
}

// Collect implements prometheus.Collector. Depths are read with one short
// script per watched queue, bounded by a 2 second timeout for the scrape.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.counters {
		c.Collect(ch)
	}
	m.mu.Lock()
	qs := append([]*Queue(nil), m.queues...)
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, q := range qs {
		s, err := q.Stats(ctx)
		if err != nil {
			m.errors.Inc()
			continue
		}
		for _, d := range []struct {
			state string
			n     int64
		}{{"due", s.Due}, {"delayed", s.Delayed}, {"inflight", s.InFlight}, {"dead", s.Dead}} {
			ch <- prometheus.MustNewConstMetric(m.depth, prometheus.GaugeValue, float64(d.n), q.name, d.state)
		}
		age := 0.0
		if !s.OldestDue.IsZero() {
			age = max(0, q.o.Now().Sub(s.OldestDue).Seconds())
		}
		ch <- prometheus.MustNewConstMetric(m.age, prometheus.GaugeValue, age, q.name)
	}
	m.errors.Collect(ch)
}
