package lock

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/lock/internal/locktest"
)

func TestRWManyReadersOneWriter(t *testing.T) {
	deployments(t, func(ctx context.Context, t *testing.T, c *Client) {
		rw := c.RWMutex("{sku:9}")
		var readers []*Lease
		for range 10 {
			r, err := rw.TryRLock(ctx, time.Minute)
			require.NoError(t, err, "readers share the lock")
			assert.False(t, r.h.(*rwHold).write)
			readers = append(readers, r)
		}
		_, err := rw.TryLock(ctx, time.Minute)
		assert.ErrorIs(t, err, ErrNotObtained, "readers exclude the writer")

		// A reader releases only its own share.
		require.NoError(t, readers[0].Unlock(ctx))
		assert.ErrorIs(t, readers[0].Unlock(ctx), ErrNotHeld)
		assert.EqualValues(t, 9, c.rdb.HLen(ctx, rw.keyv[0]).Val())
		for _, r := range readers[1:] {
			held, err := r.heldIn(ctx)
			require.NoError(t, err)
			assert.True(t, held)
			require.NoError(t, r.Unlock(ctx))
		}

		w, err := rw.TryLock(ctx, time.Minute)
		require.NoError(t, err)
		assert.True(t, w.h.(*rwHold).write)
		_, err = rw.TryRLock(ctx, time.Minute)
		assert.ErrorIs(t, err, ErrNotObtained, "the writer excludes readers")
		_, err = rw.TryLock(ctx, time.Minute)
		assert.ErrorIs(t, err, ErrNotObtained, "the writer excludes writers")
		require.NoError(t, w.Extend(ctx, 2*time.Minute))
		ttl, err := w.TTL(ctx)
		require.NoError(t, err)
		assert.Greater(t, ttl, time.Minute)
		require.NoError(t, w.Unlock(ctx))
		assert.Zero(t, c.rdb.Exists(ctx, rw.keyv[0]).Val())
	})
}

func TestRWWaitersWokenByRelease(t *testing.T) {
	deployments(t, func(ctx context.Context, t *testing.T, c *Client) {
		rw := c.RWMutex("doc")
		w, err := rw.TryLock(ctx, time.Minute)
		require.NoError(t, err)
		slow := WithBackoff(time.Hour, time.Hour)
		const readers = 4
		got := make(chan error, readers)
		for range readers {
			go func() {
				r, err := rw.RLock(ctx, time.Minute, slow, WithWait(20*time.Second))
				if err == nil {
					err = r.Unlock(ctx)
				}
				got <- err
			}()
		}
		locktest.Eventually(t, 10*time.Second, "readers wait", func() bool { return c.notify.count(c.RWMutex("doc").keyv[0]) == readers })
		require.NoError(t, w.Unlock(ctx))
		for range readers {
			require.NoError(t, <-got, "one write release wakes every reader")
		}
	})
}

// TestRWWriterNotStarved: readers keep overlapping so the lock is never free
// of readers; a waiting writer still gets in because its marker turns new
// readers away until the current ones leave.
func TestRWWriterNotStarved(t *testing.T) {
	deployments(t, func(ctx context.Context, t *testing.T, c *Client) {
		rw := c.RWMutex("hot")
		var reads atomic.Int64
		var writing atomic.Bool
		var overlap atomic.Bool
		stop := locktest.Repeat(t, 4, func() bool {
			r, err := rw.RLock(ctx, time.Minute, WithWait(20*time.Second))
			if err != nil {
				return false
			}
			if writing.Load() {
				overlap.Store(true)
			}
			reads.Add(1)
			time.Sleep(5 * time.Millisecond)
			_ = r.Unlock(ctx)
			return true
		})
		locktest.Eventually(t, 10*time.Second, "readers running", func() bool { return reads.Load() > 20 })

		w, err := rw.Lock(ctx, time.Minute, WithWait(20*time.Second))
		require.NoError(t, err, "the writer is not starved")
		writing.Store(true)
		_, err = rw.TryRLock(ctx, time.Minute)
		assert.ErrorIs(t, err, ErrNotObtained)
		time.Sleep(20 * time.Millisecond)
		writing.Store(false)
		require.NoError(t, w.Unlock(ctx))
		stop()
		assert.False(t, overlap.Load(), "no reader held the lock with the writer")
	})
}

func TestRWWaitingWriterBlocksNewReadersAndGivesUpCleanly(t *testing.T) {
	deployments(t, func(ctx context.Context, t *testing.T, c *Client) {
		rw := c.RWMutex("m")
		r, err := rw.TryRLock(ctx, time.Minute)
		require.NoError(t, err)
		wctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			_, err := rw.Lock(wctx, time.Minute)
			done <- err
		}()
		locktest.Eventually(t, 10*time.Second, "writer marker blocks new readers", func() bool {
			_, err := rw.TryRLock(ctx, time.Minute)
			return err != nil
		})
		cancel()
		err = <-done
		assert.ErrorIs(t, err, ErrNotObtained)
		assert.ErrorIs(t, err, context.Canceled)
		r2, err := rw.TryRLock(ctx, time.Minute)
		require.NoError(t, err, "a writer that gave up removes its marker")
		require.NoError(t, r2.Unlock(ctx))
		require.NoError(t, r.Unlock(ctx))
	})
}

func TestRWDeadHoldersExpire(t *testing.T) {
	deployments(t, func(ctx context.Context, t *testing.T, c *Client) {
		rw := c.RWMutex("dead")
		long, err := rw.TryRLock(ctx, time.Minute)
		require.NoError(t, err)
		short, err := rw.TryRLock(ctx, 50*time.Millisecond)
		require.NoError(t, err)
		require.NoError(t, long.Unlock(ctx))
		// The short reader dies; its share expires and the writer gets in.
		w, err := rw.Lock(ctx, 50*time.Millisecond, WithWait(10*time.Second))
		require.NoError(t, err)
		assert.ErrorIs(t, short.Unlock(ctx), ErrNotHeld, "an expired reader cannot release anything")
		// The writer dies too; its expiry frees the key entirely.
		locktest.Eventually(t, 10*time.Second, "key expires", func() bool { return c.rdb.Exists(ctx, rw.keyv[0]).Val() == 0 })
		assert.ErrorIs(t, w.Unlock(ctx), ErrNotHeld)
		assert.ErrorIs(t, w.Extend(ctx, time.Minute), ErrNotHeld)
	})
}

func TestRWBadInput(t *testing.T) {
	c, _ := newTestClient(t, false)
	ctx := locktest.Context(t, 30*time.Second)
	_, err := c.RWMutex("").TryRLock(ctx, time.Second)
	assert.ErrorIs(t, err, ErrInvalidName)
	_, err = c.RWMutex("x").Lock(ctx, 0)
	assert.ErrorIs(t, err, ErrInvalidTTL)
}

// TestRWInvariant: goroutines on two Clients (two "processes") read and
// write at random; at no moment is there a writer together with anyone else.
func TestRWInvariant(t *testing.T) {
	deployments(t, func(ctx context.Context, t *testing.T, c *Client) {
		c2 := peer(t, c)
		var readers, writers atomic.Int32
		var violations atomic.Int32
		var wg sync.WaitGroup
		for g := range 12 {
			cl := c
			if g%2 == 1 {
				cl = c2
			}
			rw := cl.RWMutex("inv")
			wg.Go(func() {
				for i := range 15 {
					write := (g+i)%4 == 0
					var h *Lease
					var err error
					if write {
						h, err = rw.Lock(ctx, time.Minute, WithWait(20*time.Second))
					} else {
						h, err = rw.RLock(ctx, time.Minute, WithWait(20*time.Second))
					}
					if !assert.NoError(t, err) {
						return
					}
					if write {
						if writers.Add(1) != 1 || readers.Load() != 0 {
							violations.Add(1)
						}
						time.Sleep(time.Millisecond)
						writers.Add(-1)
					} else {
						readers.Add(1)
						if writers.Load() != 0 {
							violations.Add(1)
						}
						time.Sleep(time.Millisecond)
						readers.Add(-1)
					}
					assert.NoError(t, h.Unlock(ctx))
				}
			})
		}
		wg.Wait()
		assert.Zero(t, violations.Load())
	})
}
