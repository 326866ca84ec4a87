package lock

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/testutil"
)

func TestReentrantDepthThree(t *testing.T) {
	deployments(t, func(ctx context.Context, t *testing.T, c *Client) {
		alice, bob := c.NewOwner("alice"), c.NewOwner("")
		assert.Equal(t, "alice", alice.ID())
		assert.NotEmpty(t, bob.ID())

		var holds []*Reentrant
		for depth := 1; depth <= 3; depth++ {
			h, err := alice.TryLockReentrant(ctx, "cart", time.Minute)
			require.NoError(t, err)
			holds = append(holds, h)
			assert.Equal(t, strconv.Itoa(depth), c.rdb.HGet(ctx, h.Key(), "alice").Val())
		}
		// Another owner can neither enter nor release it.
		_, err := bob.TryLockReentrant(ctx, "cart", time.Minute)
		assert.ErrorIs(t, err, ErrNotObtained)
		intruder := &Reentrant{o: bob, name: "cart", keys: holds[0].keys}
		intruder.lease.init(c.env, kindReentrant, intruder, time.Minute, time.Now(), false, 0)
		_, err = intruder.Unlock(ctx)
		assert.ErrorIs(t, err, ErrNotHeld)
		assert.Equal(t, "3", c.rdb.HGet(ctx, holds[0].Key(), "alice").Val())

		// Released three times: still held, still held, released.
		for i, want := range []int64{2, 1, 0} {
			n, err := holds[2-i].Unlock(ctx)
			require.NoError(t, err)
			assert.Equal(t, want, n)
			_, err = holds[2-i].Unlock(ctx)
			assert.ErrorIs(t, err, ErrNotHeld, "a hold is released once")
		}
		assert.Zero(t, c.rdb.Exists(ctx, holds[0].Key()).Val())

		h, err := bob.TryLockReentrant(ctx, "cart", time.Minute)
		require.NoError(t, err)
		held, err := h.Held(ctx)
		require.NoError(t, err)
		assert.True(t, held)
		require.NoError(t, h.Extend(ctx, 2*time.Minute))
		ttl, err := h.TTL(ctx)
		require.NoError(t, err)
		assert.Greater(t, ttl, time.Minute)
		n, err := h.Unlock(ctx)
		require.NoError(t, err)
		assert.Zero(t, n)
	})
}

func TestReentrantEntryRearmsTTLAndExpires(t *testing.T) {
	deployments(t, func(ctx context.Context, t *testing.T, c *Client) {
		o := c.NewOwner("")
		h1, err := o.TryLockReentrant(ctx, "r", 100*time.Millisecond)
		require.NoError(t, err)
		h2, err := o.TryLockReentrant(ctx, "r", time.Minute)
		require.NoError(t, err)
		assert.Greater(t, pttl(t, c.rdb, h1.Key()), 30*time.Second, "entry re-arms the TTL")
		require.NoError(t, h2.Extend(ctx, 100*time.Millisecond))

		// The owner dies: the lock frees itself, and another owner waits it out.
		other := c.NewOwner("")
		h3, err := other.LockReentrant(ctx, "r", time.Minute, WithWaitTimeout(10*time.Second))
		require.NoError(t, err)
		_, err = h1.Unlock(ctx)
		assert.ErrorIs(t, err, ErrNotHeld, "the expired owner cannot release the new owner's lock")
		assert.Equal(t, "1", c.rdb.HGet(ctx, h3.Key(), other.ID()).Val())
		_, err = h3.Unlock(ctx)
		require.NoError(t, err)
	})
}

func TestReentrantWaiterWokenOnFullRelease(t *testing.T) {
	deployments(t, func(ctx context.Context, t *testing.T, c *Client) {
		a, b := c.NewOwner(""), c.NewOwner("")
		h1, err := a.TryLockReentrant(ctx, "w", time.Minute)
		require.NoError(t, err)
		h2, err := a.TryLockReentrant(ctx, "w", time.Minute)
		require.NoError(t, err)
		done := make(chan error, 1)
		go func() {
			h, err := b.LockReentrant(ctx, "w", time.Minute,
				WithBackoff(Backoff{Min: time.Hour, Max: time.Hour}), WithWaitTimeout(20*time.Second))
			if err == nil {
				_, err = h.Unlock(ctx)
			}
			done <- err
		}()
		testutil.Eventually(t, 10*time.Second, "waiter subscribed", func() bool { return c.notify.Count(h1.keys.reentrant()) == 1 })
		_, err = h2.Unlock(ctx)
		require.NoError(t, err)
		_, err = h1.Unlock(ctx)
		require.NoError(t, err)
		require.NoError(t, <-done)
	})
}

func TestOwnerUnlockAll(t *testing.T) {
	deployments(t, func(ctx context.Context, t *testing.T, c *Client) {
		o := c.NewOwner("")
		var keys []string
		for _, name := range []string{"a", "b", "c"} {
			m, err := o.TryLock(ctx, name, time.Minute)
			require.NoError(t, err)
			keys = append(keys, m.Key())
		}
		r, err := o.TryLockReentrant(ctx, "a", time.Minute)
		require.NoError(t, err)
		_, err = o.TryLockReentrant(ctx, "a", time.Minute)
		require.NoError(t, err)
		rh, err := o.RWMutex("d").TryRLock(ctx, time.Minute)
		require.NoError(t, err)
		keys = append(keys, r.Key(), rh.rw.Key())
		// An untracked lock of someone else stays.
		other, err := c.TryLock(ctx, "e", time.Minute)
		require.NoError(t, err)
		// One released by hand is no longer tracked.
		m, err := o.TryLock(ctx, "f", time.Minute)
		require.NoError(t, err)
		require.NoError(t, m.Unlock(ctx))
		assert.Equal(t, 6, o.Len())

		require.NoError(t, o.UnlockAll(ctx))
		assert.Zero(t, o.Len())
		for _, k := range keys {
			assert.Zero(t, c.rdb.Exists(ctx, k).Val(), k)
		}
		assert.Equal(t, other.Token(), c.rdb.Get(ctx, other.Key()).Val())

		// A lock that expired meanwhile is reported.
		_, err = o.TryLock(ctx, "g", 10*time.Millisecond)
		require.NoError(t, err)
		time.Sleep(30 * time.Millisecond)
		assert.ErrorIs(t, o.UnlockAll(ctx), ErrNotHeld)
		assert.Zero(t, o.Len())
	})
}
