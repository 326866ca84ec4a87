package lock

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// kind labels metrics by lock type.
type kind uint8

const (
	kindMutex kind = iota
	kindReentrant
	kindRead
	kindWrite
	kindRedlock
	numKinds
)

var kindNames = [numKinds]string{"mutex", "reentrant", "read", "write", "redlock"}

// failure reasons, the "reason" label of lock_failures_total.
const (
	reasonBusy = iota // TryLock found the lock held
	reasonTimeout
	reasonRetries
	reasonCanceled
	reasonError
	numReasons
)

var reasonNames = [numReasons]string{"busy", "timeout", "retries", "canceled", "error"}

// Metrics are the Prometheus collectors of the package. Make one with
// NewMetrics, register it (it is a prometheus.Collector) and pass it in
// Options.Metrics or RedlockOptions.Metrics; one Metrics may serve several
// clients. A nil *Metrics records nothing.
//
// Series, each labelled kind = mutex | reentrant | read | write | redlock:
//
//	<ns>_lock_acquired_total                  successful acquisitions
//	<ns>_lock_failures_total{reason}          failed acquisitions: busy, timeout, retries, canceled, error
//	<ns>_lock_wait_seconds                    histogram of time spent in Lock, success or not
//	<ns>_lock_renewals_total{result}          watchdog renewals: ok, failed
//	<ns>_lock_lost_total                      locks known lost while meant to be held
type Metrics struct {
	acquiredVec *prometheus.CounterVec
	failuresVec *prometheus.CounterVec
	waitVec     *prometheus.HistogramVec
	renewalsVec *prometheus.CounterVec
	lostVec     *prometheus.CounterVec

	// Resolved children, so the hot path does no label lookups.
	acquired [numKinds]prometheus.Counter
	failures [numKinds][numReasons]prometheus.Counter
	wait     [numKinds]prometheus.Observer
	renewOK  [numKinds]prometheus.Counter
	renewBad [numKinds]prometheus.Counter
	lostC    [numKinds]prometheus.Counter
}

// NewMetrics returns the collectors, named under namespace (may be empty).
func NewMetrics(namespace string) *Metrics {
	m := &Metrics{
		acquiredVec: counterVec(namespace, "acquired_total", "Locks acquired.", "kind"),
		failuresVec: counterVec(namespace, "failures_total", "Lock acquisitions that failed, by reason.", "kind", "reason"),
		waitVec: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "lock", Name: "wait_seconds",
			Help:    "Time spent waiting in Lock, whether or not it obtained the lock.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"kind"}),
		renewalsVec: counterVec(namespace, "renewals_total", "Watchdog renewals, by result.", "kind", "result"),
		lostVec:     counterVec(namespace, "lost_total", "Locks known lost while their holder meant to hold them.", "kind"),
	}
	for k := range numKinds {
		name := kindNames[k]
		m.acquired[k] = m.acquiredVec.WithLabelValues(name)
		for r := range numReasons {
			m.failures[k][r] = m.failuresVec.WithLabelValues(name, reasonNames[r])
		}
		m.wait[k] = m.waitVec.WithLabelValues(name)
		m.renewOK[k] = m.renewalsVec.WithLabelValues(name, "ok")
		m.renewBad[k] = m.renewalsVec.WithLabelValues(name, "failed")
		m.lostC[k] = m.lostVec.WithLabelValues(name)
	}
	return m
}

// counterVec is a counter of the lock subsystem under namespace.
func counterVec(namespace, name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "lock", Name: name, Help: help,
	}, labels)
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	m.acquiredVec.Describe(ch)
	m.failuresVec.Describe(ch)
	m.waitVec.Describe(ch)
	m.renewalsVec.Describe(ch)
	m.lostVec.Describe(ch)
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.acquiredVec.Collect(ch)
	m.failuresVec.Collect(ch)
	m.waitVec.Collect(ch)
	m.renewalsVec.Collect(ch)
	m.lostVec.Collect(ch)
}

// outcome records the result of one TryLock or Lock call. waited is zero for
// TryLock, which observes no wait time.
func (m *Metrics) outcome(k kind, err error, waited time.Duration, isWait bool) {
	if m == nil {
		return
	}
	if isWait {
		m.wait[k].Observe(waited.Seconds())
	}
	if err == nil {
		m.acquired[k].Inc()
		return
	}
	m.failures[k][reasonOf(err)].Inc()
}

func reasonOf(err error) int {
	var we *waitError
	switch {
	case errors.As(err, &we):
		return reasonCanceled
	case errors.Is(err, ErrWaitTimeout):
		return reasonTimeout
	case errors.Is(err, ErrRetriesExhausted):
		return reasonRetries
	case errors.Is(err, ErrNotObtained):
		return reasonBusy
	}
	return reasonError
}

func (m *Metrics) renewal(k kind, ok bool) {
	if m == nil {
		return
	}
	if ok {
		m.renewOK[k].Inc()
	} else {
		m.renewBad[k].Inc()
	}
}

func (m *Metrics) lost(k kind) {
	if m == nil {
		return
	}
	m.lostC[k].Inc()
}
