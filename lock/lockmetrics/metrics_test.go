package lockmetrics_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/lock"
	"github.com/seckill/seckill/lock/internal/locktest"
	"github.com/seckill/seckill/lock/lockmetrics"
)

// value gathers m and returns the value of the series, or its sample count
// for a histogram.
func value(t *testing.T, m *lockmetrics.Metrics, name string, labels map[string]string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(m))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, s := range mf.GetMetric() {
			got := map[string]string{}
			for _, l := range s.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue series
				}
			}
			if s.GetHistogram() != nil {
				return float64(s.GetHistogram().GetSampleCount())
			}
			return s.GetCounter().GetValue()
		}
	}
	return 0
}

func TestMetrics(t *testing.T) {
	m := lockmetrics.New("t")
	rdb, prefix := locktest.Redis(t)
	c := lock.New(rdb, lock.WithPrefix(prefix), lock.WithObserver(m))
	t.Cleanup(func() { _ = c.Close() })
	ctx := locktest.Context(t, 30*time.Second)

	mu, err := c.TryLock(ctx, "m", time.Minute)
	require.NoError(t, err)
	_, err = c.TryLock(ctx, "m", time.Minute)
	require.ErrorIs(t, err, lock.ErrNotObtained)
	_, err = c.Lock(ctx, "m", time.Minute, lock.WithWait(time.Millisecond))
	require.ErrorIs(t, err, lock.ErrWaitTimeout)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = c.Lock(cctx, "m", time.Minute)
	require.Error(t, err)
	require.NoError(t, mu.Unlock(ctx))
	r, err := c.Owner("").TryLock(ctx, "m", time.Minute)
	require.NoError(t, err)
	require.NoError(t, r.Unlock(ctx))
	m.Renewed("redlock", true)
	m.Renewed("read", false)
	m.Lost("write")

	kind := func(k string, extra ...string) map[string]string {
		l := map[string]string{"kind": k}
		for i := 0; i < len(extra); i += 2 {
			l[extra[i]] = extra[i+1]
		}
		return l
	}
	assert.Equal(t, 1.0, value(t, m, "t_lock_acquired_total", kind("mutex")))
	assert.Equal(t, 1.0, value(t, m, "t_lock_acquired_total", kind("reentrant")))
	assert.Equal(t, 1.0, value(t, m, "t_lock_failures_total", kind("mutex", "reason", "busy")))
	assert.Equal(t, 1.0, value(t, m, "t_lock_failures_total", kind("mutex", "reason", "timeout")))
	assert.Equal(t, 1.0, value(t, m, "t_lock_failures_total", kind("mutex", "reason", "canceled")))
	assert.Equal(t, 2.0, value(t, m, "t_lock_wait_seconds", kind("mutex")))
	assert.Equal(t, 1.0, value(t, m, "t_lock_renewals_total", kind("redlock", "result", "ok")))
	assert.Equal(t, 1.0, value(t, m, "t_lock_renewals_total", kind("read", "result", "failed")))
	assert.Equal(t, 1.0, value(t, m, "t_lock_lost_total", kind("write")))
}

// BenchmarkBuyPathLockMetrics is the lock call of seckill's buy path with
// the metrics on: Lock with a wait bound and a fence, then Unlock.
func BenchmarkBuyPathLockMetrics(b *testing.B) {
	rdb, prefix := locktest.Redis(b)
	c := lock.New(rdb, lock.WithPrefix(prefix), lock.WithObserver(lockmetrics.New("b")))
	b.Cleanup(func() { _ = c.Close() })
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		l, err := c.Lock(ctx, "{sku:7}", 2*time.Second, lock.WithWait(time.Second), lock.WithFencing())
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
