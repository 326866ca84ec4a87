package queue_test

import (
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/queue"
	"github.com/seckill/seckill/internal/testsvc"
)

// gather returns every sample of m as name{label values...} -> value.
func gather(t *testing.T, m *queue.Metrics) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(m))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, s := range mf.GetMetric() {
			key := mf.GetName()
			for _, l := range s.GetLabel() {
				key += "|" + l.GetValue()
			}
			switch {
			case s.Counter != nil:
				out[key] = s.GetCounter().GetValue()
			case s.Gauge != nil:
				out[key] = s.GetGauge().GetValue()
			}
		}
	}
	return out
}

func counterValue(t *testing.T, m *queue.Metrics, name, q string) float64 {
	t.Helper()
	return gather(t, m)[name+"|"+q]
}

func TestMetrics(t *testing.T) {
	testsvc.Backends(t, func(t *testing.T, cluster bool) {
		m := queue.NewMetrics("seckill")
		q, _, clk, ctx := clockedQueue(t, cluster, "metrics", queue.Options{Metrics: m})
		m.Watch(q)
		_, err := q.EnqueueBatch(ctx, []queue.Task{task("a"), task("b"), task("c"), task("a"),
			{ID: "later", Type: "x", Due: clk.Now().Add(time.Hour)}})
		require.NoError(t, err)
		clk.Advance(3 * time.Second)
		got := claim(ctx, t, q, 2, time.Second, 2)
		require.NoError(t, q.Ack(ctx, got[0]))
		_, err = q.Nack(ctx, got[1], errors.New("x"))
		require.NoError(t, err)

		v := gather(t, m)
		name := q.Name()
		assert.Equal(t, 4.0, v["seckill_queue_enqueued_total|"+name])
		assert.Equal(t, 2.0, v["seckill_queue_claimed_total|"+name])
		assert.Equal(t, 1.0, v["seckill_queue_acked_total|"+name])
		assert.Equal(t, 1.0, v["seckill_queue_retried_total|"+name])
		assert.Equal(t, 1.0, v["seckill_queue_depth|"+name+"|due"], "c is due; b waits for its backoff")
		assert.Equal(t, 2.0, v["seckill_queue_depth|"+name+"|delayed"])
		assert.Equal(t, 0.0, v["seckill_queue_depth|"+name+"|inflight"])
		assert.Equal(t, 3.0, v["seckill_queue_oldest_due_age_seconds|"+name])

		// A nil *Metrics is off and costs nothing.
		q2, _ := newQueue(t, cluster, "nometrics", queue.Options{})
		_, err = q2.Enqueue(ctx, task("z"))
		require.NoError(t, err)
	})
}
