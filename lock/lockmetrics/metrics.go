// Package lockmetrics records what the locks of package lock do as
// Prometheus metrics. It is apart from package lock so that a program that
// does not want Prometheus does not link it.
//
//	m := lockmetrics.New("myapp")
//	prometheus.MustRegister(m)
//	locks := lock.New(rdb, lock.WithObserver(m))
//
// Series, each labelled kind = mutex | reentrant | read | write | redlock:
//
//	<ns>_lock_acquired_total                  successful acquisitions
//	<ns>_lock_failures_total{reason}          failed acquisitions: busy, timeout, canceled, error
//	<ns>_lock_wait_seconds                    histogram of time spent in Lock, success or not
//	<ns>_lock_renewals_total{result}          watchdog renewals: ok, failed
//	<ns>_lock_lost_total                      locks known lost while meant to be held
package lockmetrics

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seckill/seckill/lock"
)

var kinds = [...]string{"mutex", "reentrant", "read", "write", "redlock"}

// failure reasons, the "reason" label of lock_failures_total.
const (
	reasonBusy = iota // TryLock found the lock held
	reasonTimeout
	reasonCanceled
	reasonError
	numReasons
)

var reasonNames = [numReasons]string{"busy", "timeout", "canceled", "error"}

const numKinds = len(kinds)

// Metrics is a prometheus.Collector and a lock.Observer. One Metrics may
// serve several Clients and Redlocks; register it once.
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

var _ lock.Observer = (*Metrics)(nil)

// New returns the collectors, named under namespace (may be empty).
func New(namespace string) *Metrics {
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
	for k, name := range kinds {
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

// kindIndex maps a kind to its series; an unknown kind counts as the last.
func kindIndex(kind string) int {
	switch kind {
	case "mutex":
		return 0
	case "reentrant":
		return 1
	case "read":
		return 2
	case "write":
		return 3
	}
	return 4
}

// Acquired implements lock.Observer: a Lock call's time is observed, and
// every call counts as acquired or as failed with its reason.
func (m *Metrics) Acquired(kind string, waited bool, took time.Duration, err error) {
	k := kindIndex(kind)
	if waited {
		m.wait[k].Observe(took.Seconds())
	}
	if err == nil {
		m.acquired[k].Inc()
		return
	}
	m.failures[k][reasonOf(err)].Inc()
}

func reasonOf(err error) int {
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return reasonCanceled
	case errors.Is(err, lock.ErrWaitTimeout):
		return reasonTimeout
	case errors.Is(err, lock.ErrNotObtained):
		return reasonBusy
	}
	return reasonError
}

// Renewed implements lock.Observer.
func (m *Metrics) Renewed(kind string, ok bool) {
	if ok {
		m.renewOK[kindIndex(kind)].Inc()
	} else {
		m.renewBad[kindIndex(kind)].Inc()
	}
}

// Lost implements lock.Observer.
func (m *Metrics) Lost(kind string) { m.lostC[kindIndex(kind)].Inc() }
