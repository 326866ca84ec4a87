package lock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/lock/internal/locktest"
)

func TestObserver(t *testing.T) {
	rec := newRecorder()
	c, _ := newTestClient(t, false, WithObserver(rec))
	ctx := locktest.Context(t, 30*time.Second)
	mu, err := c.TryLock(ctx, "m", time.Minute)
	require.NoError(t, err)
	_, err = c.TryLock(ctx, "m", time.Minute)
	require.ErrorIs(t, err, ErrNotObtained)
	_, err = c.Lock(ctx, "m", time.Minute, WithWait(time.Millisecond))
	require.ErrorIs(t, err, ErrWaitTimeout)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = c.Lock(cctx, "m", time.Minute)
	require.Error(t, err)
	require.NoError(t, mu.Unlock(ctx))

	r, err := c.Owner("").TryLock(ctx, "m", time.Minute)
	require.NoError(t, err)
	require.NoError(t, r.Unlock(ctx))
	w, err := c.RWMutex("m").Lock(ctx, time.Minute)
	require.NoError(t, err)
	require.NoError(t, w.Unlock(ctx))

	rec.mu.Lock()
	defer rec.mu.Unlock()
	assert.Equal(t, map[string]int{"mutex": 1, "reentrant": 1, "write": 1}, rec.acquired)
	assert.Equal(t, map[string]int{"mutex": 2, "write": 1}, rec.waits, "Lock calls are timed, TryLock calls are not")
	require.Len(t, rec.failed["mutex"], 3)
	assert.ErrorIs(t, rec.failed["mutex"][0], ErrNotObtained)
	assert.ErrorIs(t, rec.failed["mutex"][1], ErrWaitTimeout)
	assert.ErrorIs(t, rec.failed["mutex"][2], context.Canceled)
}

func TestNoObserverCostsNothing(t *testing.T) {
	e := newEnv(newOptions(nil))
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		e.acquired(kindMutex, true, time.Second, nil)
		e.renewal(kindMutex, true)
		e.lostOne(kindMutex)
	}))
}

func TestBackoffSchedule(t *testing.T) {
	b := backoff{min: 2 * time.Millisecond, max: 100 * time.Millisecond}
	for _, tc := range []struct {
		attempt int
		lo, hi  time.Duration
	}{
		{-1, time.Millisecond, 2 * time.Millisecond},
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
	assert.Equal(t, defaultBackoff, backoff{}.withDefaults())
	assert.Equal(t, backoff{min: time.Second, max: time.Second}, backoff{min: time.Second, max: time.Millisecond}.withDefaults())
	var o options
	WithBackoff(0, 0)(&o)
	assert.Equal(t, defaultBackoff, o.backoff)
}
