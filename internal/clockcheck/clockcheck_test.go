package clockcheck

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/testsvc"
	tu "github.com/seckill/seckill/internal/testutil"
)

// An instance whose clock agrees with Redis's measures an offset within
// its round trip; one whose clock is 5 s ahead measures about -5 s, on a
// standalone Redis and on the Cluster (where every instance reads the
// node of one slot).
func TestMeasure(t *testing.T) {
	testsvc.Deployments(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		c := New(rdb, prefix, prometheus.NewRegistry(), Options{})
		offset, rtt, err := c.Measure(t.Context())
		require.NoError(t, err)
		assert.Positive(t, rtt)
		// Redis and this test share a machine: one clock. TIME has
		// microseconds, the midpoint is off by at most half the trip.
		assert.LessOrEqual(t, offset.Abs(), rtt/2+time.Millisecond, "offset %v, round trip %v", offset, rtt)

		ahead := New(rdb, prefix, prometheus.NewRegistry(), Options{Now: func() time.Time { return time.Now().Add(5 * time.Second) }})
		offset, rtt, err = ahead.Measure(t.Context())
		require.NoError(t, err)
		assert.InDelta(t, -5*time.Second, offset, float64(rtt/2+time.Millisecond))
	})
}

// Run keeps the gauge and warns once while the clock is off, again only
// after it came back; it stops with its context.
func TestRunWarnsOnceWhileOff(t *testing.T) {
	rdb, prefix := testsvc.Redis(t)
	var skew time.Duration
	skewOf := make(chan time.Duration, 1)
	skewOf <- 0
	now := func() time.Time {
		select {
		case skew = <-skewOf:
		default:
		}
		return time.Now().Add(skew)
	}
	log, buf := tu.BufferLogger()
	reg := prometheus.NewRegistry()
	c := New(rdb, prefix, reg, Options{Every: 10 * time.Millisecond, Now: now, Log: log})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx)
	}()
	measured := func(want float64) func() bool {
		return func() bool {
			mfs, err := reg.Gather()
			if err != nil || len(mfs) != 1 {
				return false
			}
			v := mfs[0].GetMetric()[0].GetGauge().GetValue()
			return v > want-0.2 && v < want+0.2
		}
	}
	warnings := func() int { return strings.Count(buf.String(), "clock is off") }

	require.Eventually(t, measured(0), 5*time.Second, 5*time.Millisecond)
	assert.Zero(t, warnings())
	skewOf <- 2 * time.Second
	require.Eventually(t, measured(-2), 5*time.Second, 5*time.Millisecond)
	time.Sleep(50 * time.Millisecond) // several more measures
	assert.Equal(t, 1, warnings(), "once while off: %s", buf.String())
	skewOf <- 0
	require.Eventually(t, measured(0), 5*time.Second, 5*time.Millisecond)
	skewOf <- -time.Second
	require.Eventually(t, measured(1), 5*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool { return warnings() == 2 }, 5*time.Second, 5*time.Millisecond)

	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not stop with its context")
	}
}
