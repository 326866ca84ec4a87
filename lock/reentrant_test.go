package lock

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/lock/internal/locktest"
)

// left is how many holds the owner still had after the lease's Unlock.
func left(l *Lease) int64 { return l.h.(*reentrant).left.Load() }

func TestReentrantDepthThree(t *testing.T) {
	deployments(t, func(ctx context.Context, t *testing.T, c *Client) {
		alice, bob := c.Owner("alice"), c.Owner("")
		assert.Equal(t, "alice", alice.id)
		assert.NotEmpty(t, bob.id)

		var holds []*Lease
		for depth := 1; depth <= 3; depth++ {
			h, err := alice.TryLock(ctx, "cart", time.Minute)
			require.NoError(t, err)
			holds = append(holds, h)
			assert.Equal(t, "alice", h.Token())
			assert.Equal(t, strconv.Itoa(depth), c.rdb.HGet(ctx, h.Key(), "alice").Val())
		}
		// Another owner can neither enter nor release it.
		_, err := bob.TryLock(ctx, "cart", time.Minute)
		assert.ErrorIs(t, err, ErrNotObtained)
		intruder := &reentrant{o: bob, keyv: []string{holds[0].Key()}}
		intruder.l.start(c.env, kindReentrant, intruder, time.Minute, time.Now(), &options{})
		assert.ErrorIs(t, intruder.l.Unlock(ctx), ErrNotHeld)
		assert.Equal(t, "3", c.rdb.HGet(ctx, holds[0].Key(), "alice").Val())

		// Released three times: still held, still held, released.
		for i, want := range []int64{2, 1, 0} {
			require.NoError(t, holds[2-i].Unlock(ctx))
			assert.Equal(t, want, left(holds[2-i]))
			assert.ErrorIs(t, holds[2-i].Unlock(ctx), ErrNotHeld, "a hold is released once")
		}
		assert.Zero(t, c.rdb.Exists(ctx, holds[0].Key()).Val())

		h, err := bob.TryLock(ctx, "cart", time.Minute)
		require.NoError(t, err)
		held, err := h.heldIn(ctx)
		require.NoError(t, err)
		assert.True(t, held)
		require.NoError(t, h.Extend(ctx, 2*time.Minute))
		ttl, err := h.TTL(ctx)
		require.NoError(t, err)
		assert.Greater(t, ttl, time.Minute)
		require.NoError(t, h.Unlock(ctx))
		assert.Zero(t, left(h))
	})
}

func TestReentrantEntryRearmsTTLAndExpires(t *testing.T) {
	deployments(t, func(ctx context.Context, t *testing.T, c *Client) {
		o := c.Owner("")
		h1, err := o.TryLock(ctx, "r", 100*time.Millisecond)
		require.NoError(t, err)
		h2, err := o.TryLock(ctx, "r", time.Minute)
		require.NoError(t, err)
		assert.Greater(t, pttl(t, c.rdb, h1.Key()), 30*time.Second, "entry re-arms the TTL")
		require.NoError(t, h2.Extend(ctx, 100*time.Millisecond))

		// The owner dies: the lock frees itself, and another owner waits it out.
		other := c.Owner("")
		h3, err := other.Lock(ctx, "r", time.Minute, WithWait(10*time.Second))
		require.NoError(t, err)
		assert.ErrorIs(t, h1.Unlock(ctx), ErrNotHeld, "the expired owner cannot release the new owner's lock")
		assert.Equal(t, "1", c.rdb.HGet(ctx, h3.Key(), other.id).Val())
		require.NoError(t, h3.Unlock(ctx))
	})
}

func TestReentrantWaiterWokenOnFullRelease(t *testing.T) {
	deployments(t, func(ctx context.Context, t *testing.T, c *Client) {
		a, b := c.Owner(""), c.Owner("")
		h1, err := a.TryLock(ctx, "w", time.Minute)
		require.NoError(t, err)
		h2, err := a.TryLock(ctx, "w", time.Minute)
		require.NoError(t, err)
		done := make(chan error, 1)
		go func() {
			h, err := b.Lock(ctx, "w", time.Minute,
				WithBackoff(time.Hour, time.Hour), WithWait(20*time.Second))
			if err == nil {
				err = h.Unlock(ctx)
			}
			done <- err
		}()
		locktest.Eventually(t, 10*time.Second, "waiter subscribed", func() bool { return c.notify.count(h1.Key()) == 1 })
		require.NoError(t, h2.Unlock(ctx))
		require.NoError(t, h1.Unlock(ctx))
		require.NoError(t, <-done)
	})
}

func TestOwnerUnlockAll(t *testing.T) {
	deployments(t, func(ctx context.Context, t *testing.T, c *Client) {
		o := c.Owner("")
		var keys []string
		for _, name := range []string{"a", "b", "c", "a", "a"} {
			m, err := o.TryLock(ctx, name, time.Minute)
			require.NoError(t, err)
			keys = append(keys, m.Key())
		}
		// An untracked lock of someone else stays.
		other, err := c.Owner("other").TryLock(ctx, "e", time.Minute)
		require.NoError(t, err)
		// One released by hand is no longer tracked.
		m, err := o.TryLock(ctx, "f", time.Minute)
		require.NoError(t, err)
		require.NoError(t, m.Unlock(ctx))
		assert.Equal(t, 5, o.len())

		require.NoError(t, o.UnlockAll(ctx))
		assert.Zero(t, o.len())
		for _, k := range keys {
			assert.Zero(t, c.rdb.Exists(ctx, k).Val(), k)
		}
		assert.Equal(t, "1", c.rdb.HGet(ctx, other.Key(), "other").Val())

		// A lock that expired meanwhile is reported.
		_, err = o.TryLock(ctx, "g", 10*time.Millisecond)
		require.NoError(t, err)
		time.Sleep(30 * time.Millisecond)
		assert.ErrorIs(t, o.UnlockAll(ctx), ErrNotHeld)
		assert.Zero(t, o.len())
	})
}
