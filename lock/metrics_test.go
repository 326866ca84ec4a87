package lock

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/testutil"
)

// counterValue gathers m and returns the value of the series, summing
// histogram counts for histograms.
func counterValue(t *testing.T, m *Metrics, name string, labels map[string]string) float64 {
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
	m := NewMetrics("seckill")
	c, _ := newTestClient(t, false, Options{Metrics: m})
	ctx := testutil.Context(t, 30*time.Second)
	mu, err := c.TryLock(ctx, "m", time.Minute)
	require.NoError(t, err)
	_, err = c.TryLock(ctx, "m", time.Minute)
	require.ErrorIs(t, err, ErrNotObtained)
	_, err = c.Lock(ctx, "m", time.Minute, WithMaxRetries(1))
	require.ErrorIs(t, err, ErrRetriesExhausted)
	_, err = c.Lock(ctx, "m", time.Minute, WithWaitTimeout(time.Millisecond))
	require.ErrorIs(t, err, ErrWaitTimeout)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = c.Lock(cctx, "m", time.Minute)
	require.Error(t, err)
	require.NoError(t, mu.Unlock(ctx))

	o := c.NewOwner("")
	r, err := o.TryLockReentrant(ctx, "m", time.Minute)
	require.NoError(t, err)
	_, err = r.Unlock(ctx)
	require.NoError(t, err)

	kind := func(k string, extra ...string) map[string]string {
		l := map[string]string{"kind": k}
		for i := 0; i < len(extra); i += 2 {
			l[extra[i]] = extra[i+1]
		}
		return l
	}
	assert.Equal(t, 1.0, counterValue(t, m, "seckill_lock_acquired_total", kind("mutex")))
	assert.Equal(t, 1.0, counterValue(t, m, "seckill_lock_acquired_total", kind("reentrant")))
	assert.Equal(t, 1.0, counterValue(t, m, "seckill_lock_failures_total", kind("mutex", "reason", "busy")))
	assert.Equal(t, 1.0, counterValue(t, m, "seckill_lock_failures_total", kind("mutex", "reason", "retries")))
	assert.Equal(t, 1.0, counterValue(t, m, "seckill_lock_failures_total", kind("mutex", "reason", "timeout")))
	assert.Equal(t, 1.0, counterValue(t, m, "seckill_lock_failures_total", kind("mutex", "reason", "canceled")))
	assert.Equal(t, 3.0, counterValue(t, m, "seckill_lock_wait_seconds", kind("mutex")))
}

func TestNilMetricsAreOff(_ *testing.T) {
	var m *Metrics
	m.outcome(kindMutex, nil, time.Second, true)
	m.renewal(kindMutex, true)
	m.lost(kindMutex)
}

func TestBackoffSchedule(t *testing.T) {
	b := Backoff{Min: 2 * time.Millisecond, Max: 100 * time.Millisecond}
	for _, tc := range []struct {
		attempt int
		lo, hi  time.Duration
	}{
		{0, time.Millisecond, 2 * time.Millisecond},
		{1, 2 * time.Millisecond, 4 * time.Millisecond},
		{4, 16 * time.Millisecond, 32 * time.Millisecond},
		{6, 50 * time.Millisecond, 100 * time.Millisecond},
		{40, 50 * time.Millisecond, 100 * time.Millisecond},
		{1000, 50 * time.Millisecond, 100 * time.Millisecond},
	} {
		for range 50 {
			d := b.delay(tc.attempt)
			assert.GreaterOrEqual(t, d, tc.lo, "attempt %d", tc.attempt)
			assert.LessOrEqual(t, d, tc.hi, "attempt %d", tc.attempt)
		}
	}
	assert.Equal(t, defaultBackoff, Backoff{}.withDefaults())
	assert.Equal(t, Backoff{Min: time.Second, Max: time.Second}, Backoff{Min: time.Second, Max: time.Millisecond}.withDefaults())
}
