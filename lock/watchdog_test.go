package lock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/lock/internal/locktest"
)

func TestWatchdogKeepsLockAlive(t *testing.T) {
	deployments(t, func(ctx context.Context, t *testing.T, c *Client) {
		m := keptAlive(ctx, t, c, "long")
		_, err := c.TryLock(ctx, "long", watchdogTTL)
		assert.ErrorIs(t, err, ErrNotObtained)

		require.NoError(t, m.Unlock(ctx))
		assert.Zero(t, c.rdb.Exists(ctx, m.Key()).Val(), "no renewal after Unlock")
		time.Sleep(watchdogTTL)
		assert.Zero(t, c.rdb.Exists(ctx, m.Key()).Val(), "no renewal after Unlock")
	})
}

func TestWatchdogCapStopsRenewal(t *testing.T) {
	locktest.Backends(t, func(t *testing.T, cluster bool) {
		t.Parallel()
		rec := newRecorder()
		c, rdb := newTestClient(t, cluster, WithObserver(rec))
		ctx := locktest.Context(t, 30*time.Second)
		const ttl = 300 * time.Millisecond
		hook := &locktest.Commands{}
		rdb.AddHook(hook)
		m, err := c.TryLock(ctx, "capped", ttl, WithWatchdog(2))
		require.NoError(t, err)
		// After two renewals the watchdog stops, the key expires and
		// the handle reports the loss. The local estimate runs from
		// before each command was sent, so the handle gives up no
		// later than Redis expires the key.
		locktest.ClosedWithin(t, 10*time.Second, m.Done(), "capped lock expires")
		assert.ErrorIs(t, m.Err(), ErrLockLost)
		locktest.Eventually(t, 10*time.Second, "key expires", func() bool { return rdb.Exists(ctx, m.Key()).Val() == 0 })
		ok := rec.get(func(r *recorder) int { return r.renewals["mutex"][1] })
		assert.LessOrEqual(t, ok, 2, "at most the capped number of renewals")
		renewals := func() int {
			n := 0
			for _, cmd := range hook.Take() {
				if len(cmd) > 3 && cmd[3] == m.Key() && (cmd[0] == "evalsha" || cmd[0] == "eval") {
					n++
				}
			}
			return n
		}
		assert.Positive(t, renewals())
		time.Sleep(2 * ttl)
		assert.Zero(t, renewals(), "no renewal after the cap")
		assert.ErrorIs(t, m.Unlock(ctx), ErrNotHeld)
	})
}

func TestLostSignal(t *testing.T) {
	deployments(t, func(ctx context.Context, t *testing.T, c *Client) {
		for _, tc := range []struct {
			name   string
			behind func(ctx context.Context, key string) error
		}{
			{"deleted", func(ctx context.Context, key string) error { return c.rdb.Del(ctx, key).Err() }},
			{"overwritten", func(ctx context.Context, key string) error {
				return c.rdb.Set(ctx, key, "someone-else", time.Minute).Err()
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				m, err := c.TryLock(ctx, "lost:"+tc.name, 150*time.Millisecond, WithWatchdog(0))
				require.NoError(t, err)
				work, cancel := m.Context(ctx)
				defer cancel()
				require.NoError(t, tc.behind(ctx, m.Key()))

				locktest.ClosedWithin(t, 10*time.Second, m.Done(), "lost signal")
				<-work.Done()
				assert.ErrorIs(t, context.Cause(work), ErrLockLost)
				assert.ErrorIs(t, m.Err(), ErrLockLost)
				assert.Zero(t, m.validity())
				assert.ErrorIs(t, m.Unlock(ctx), ErrNotHeld)
				if tc.name == "overwritten" {
					assert.Equal(t, "someone-else", c.rdb.Get(ctx, m.Key()).Val(), "the other holder's lock is untouched")
				}
			})
		}
	})
}

func TestLostSignalWithoutWatchdogAtExpiry(t *testing.T) {
	c, _ := newTestClient(t, false)
	ctx := locktest.Context(t, 30*time.Second)
	m, err := c.TryLock(ctx, "short", 50*time.Millisecond)
	require.NoError(t, err)
	locktest.ClosedWithin(t, 10*time.Second, m.Done(), "expiry")
	assert.ErrorIs(t, m.Err(), ErrLockLost)
}

// TestLostSignalWhenRenewalsKeepFailing kills the only Redis server: every
// renewal fails, and once the TTL has passed the handle reports the loss.
func TestLostSignalWhenRenewalsKeepFailing(t *testing.T) {
	t.Parallel()
	srv, rdb := killableNode(t)
	rec := newRecorder()
	c := New(rdb, WithObserver(rec))
	t.Cleanup(func() { _ = c.Close() })
	ctx := locktest.Context(t, 30*time.Second)
	mu, err := c.TryLock(ctx, "fragile", 200*time.Millisecond, WithWatchdog(0))
	require.NoError(t, err)
	srv.Kill()
	locktest.ClosedWithin(t, 10*time.Second, mu.Done(), "lost after failed renewals")
	assert.ErrorIs(t, mu.Err(), ErrLockLost)
	assert.Equal(t, 1, rec.get(func(r *recorder) int { return r.lost["mutex"] }))
	assert.Positive(t, rec.get(func(r *recorder) int { return r.renewals["mutex"][0] }))
}

// TestValidityUsesInjectedClock shows the local expiry estimate follows the
// injected clock, which a real clock could only show by sleeping.
func TestValidityUsesInjectedClock(t *testing.T) {
	clock := locktest.NewClock(time.Date(2026, 11, 11, 0, 0, 0, 0, time.UTC))
	c, _ := newTestClient(t, false, withClock(clock.Now))
	ctx := locktest.Context(t, 30*time.Second)
	m, err := c.TryLock(ctx, "clock", time.Hour)
	require.NoError(t, err)
	assert.Equal(t, time.Hour, m.validity())
	clock.Advance(59 * time.Minute)
	assert.Equal(t, time.Minute, m.validity())
	require.NoError(t, m.Extend(ctx, time.Hour))
	assert.Equal(t, time.Hour, m.validity())
	clock.Advance(2 * time.Hour)
	assert.Zero(t, m.validity())
	require.NoError(t, m.Unlock(ctx))
}

// TestDoneAfterCloseFallsBackToExpiry: Close stops the watchdog; Done then
// fires when the lock expires instead of never.
func TestDoneAfterCloseFallsBackToExpiry(t *testing.T) {
	c, _ := newTestClient(t, false)
	ctx := locktest.Context(t, 30*time.Second)
	m, err := c.TryLock(ctx, "closing", 200*time.Millisecond, WithWatchdog(0))
	require.NoError(t, err)
	done := m.Done()
	require.NoError(t, c.Close())
	locktest.ClosedWithin(t, 10*time.Second, done, "expiry after Close")
	assert.ErrorIs(t, m.Err(), ErrLockLost)
}
