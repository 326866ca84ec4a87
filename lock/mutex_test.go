package lock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/lock/internal/locktest"
)

func TestMutexBasic(t *testing.T) {
	deployments(t, func(ctx context.Context, t *testing.T, c *Client) {
		m, err := c.TryLock(ctx, "order", time.Minute)
		require.NoError(t, err)
		assert.True(t, strings.HasSuffix(m.Key(), "lock:{order}"), m.Key())
		assert.Equal(t, m.Token(), c.rdb.Get(ctx, m.Key()).Val())
		assert.Zero(t, m.Fence())

		held, err := m.heldIn(ctx)
		require.NoError(t, err)
		assert.True(t, held)
		ttl, err := m.TTL(ctx)
		require.NoError(t, err)
		assert.Greater(t, ttl, 50*time.Second)
		assert.Greater(t, m.validity(), 50*time.Second)

		// Another holder can neither lock nor unlock it.
		_, err = c.TryLock(ctx, "order", time.Minute)
		assert.ErrorIs(t, err, ErrNotObtained)
		intruder := newMutex(c, c.prefix, "order")
		intruder.l.start(c.env, kindMutex, intruder, time.Minute, time.Now(), &options{})
		assert.ErrorIs(t, intruder.l.Unlock(ctx), ErrNotHeld)
		assert.ErrorIs(t, intruder.l.Extend(ctx, time.Hour), ErrNotHeld)
		assert.Equal(t, m.Token(), c.rdb.Get(ctx, m.Key()).Val())

		require.NoError(t, m.Extend(ctx, 2*time.Minute))
		assert.Greater(t, pttl(t, c.rdb, m.Key()), 100*time.Second)

		require.NoError(t, m.Unlock(ctx))
		assert.Zero(t, c.rdb.Exists(ctx, m.Key()).Val())
		assert.ErrorIs(t, m.Err(), ErrReleased)
		locktest.ClosedWithin(t, 10*time.Second, m.Done(), "Done after Unlock")
		held, err = m.heldIn(ctx)
		require.NoError(t, err)
		assert.False(t, held)

		m2, err := c.TryLock(ctx, "order", time.Minute)
		require.NoError(t, err)
		require.NoError(t, m2.Unlock(ctx))
	})
}

func TestMutexBadInput(t *testing.T) {
	deployments(t, func(ctx context.Context, t *testing.T, c *Client) {
		_, err := c.TryLock(ctx, "", time.Second)
		assert.ErrorIs(t, err, ErrInvalidName)
		_, err = c.Lock(ctx, "", time.Second)
		assert.ErrorIs(t, err, ErrInvalidName)
		for _, ttl := range []time.Duration{0, -time.Second, 999 * time.Microsecond} {
			_, err = c.TryLock(ctx, "x", ttl)
			assert.ErrorIs(t, err, ErrInvalidTTL, ttl)
		}

		m, err := c.TryLock(ctx, "x", 20*time.Millisecond)
		require.NoError(t, err)
		assert.ErrorIs(t, m.Extend(ctx, 0), ErrInvalidTTL)
		locktest.Eventually(t, 10*time.Second, "lock expires", func() bool { return c.rdb.Exists(ctx, m.Key()).Val() == 0 })
		assert.ErrorIs(t, m.Extend(ctx, time.Second), ErrNotHeld, "extend after expiry")
		assert.ErrorIs(t, m.Unlock(ctx), ErrNotHeld, "unlock after expiry")
		assert.Zero(t, c.rdb.Exists(ctx, m.Key()).Val(), "extend after expiry must not recreate the key")

		m, err = c.TryLock(ctx, "y", time.Minute)
		require.NoError(t, err)
		require.NoError(t, m.Unlock(ctx))
		assert.ErrorIs(t, m.Unlock(ctx), ErrNotHeld, "unlock twice")
		_, err = m.TTL(ctx)
		assert.ErrorIs(t, err, ErrNotHeld)
	})
}

func TestMutexNameWithTagKeepsIt(t *testing.T) {
	c := New(nil)
	assert.Equal(t, "lock:{sku:42}", newKeys(c.prefix, "{sku:42}").mutex(), "default prefix")
	assert.Equal(t, "lock:{sku:42}", newKeys(c.prefix, "sku:42").mutex())
	assert.Equal(t, "app:{x}", newKeys(New(nil, WithPrefix("app:")).prefix, "x").mutex())
	assert.Equal(t, "p:orders{sku:42}", newKeys("p:", "orders{sku:42}").mutex())
	assert.Equal(t, "p:{a{}b}", newKeys("p:", "a{}b").mutex(), "an empty tag is no tag")
	k := newKeys("p:", "{sku:42}")
	for _, key := range []string{k.mutex(), k.fence(), k.reentrant(), k.rw()} {
		assert.Equal(t, redisSlot("seckill:{sku:42}:stock"), redisSlot(key), key)
	}
}

// redisSlot is the CRC16 hash slot of a key, as Redis Cluster computes it.
func redisSlot(key string) uint16 {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % 16384
}

// TestMutexContendedCounter: 100 goroutines increment a plain int under the
// lock. The race detector sees no race because each Unlock happens before the
// next Lock returns: in Redis (the DEL is ordered before the winning SET) and,
// within this process, through the shared go-redis connection pool whose
// synchronisation both calls pass through after those commands.
func TestMutexContendedCounter(t *testing.T) {
	deployments(t, func(ctx context.Context, t *testing.T, c *Client) {
		contend(ctx, t, "counter", 100, c, c)
	})
}

func TestMutexExpiryFreesCrashedHolder(t *testing.T) {
	deployments(t, func(ctx context.Context, t *testing.T, c *Client) {
		// The holder "crashes": it never unlocks.
		old, err := c.TryLock(ctx, "job", 100*time.Millisecond)
		require.NoError(t, err)

		m, err := c.Lock(ctx, "job", time.Minute, WithWait(10*time.Second))
		require.NoError(t, err)

		// The old holder comes back: its Unlock must not free the new lock.
		assert.ErrorIs(t, old.Unlock(ctx), ErrNotHeld)
		assert.ErrorIs(t, old.Extend(ctx, time.Hour), ErrNotHeld)
		held, err := m.heldIn(ctx)
		require.NoError(t, err)
		assert.True(t, held)
		assert.Equal(t, m.Token(), c.rdb.Get(ctx, m.Key()).Val())
		require.NoError(t, m.Unlock(ctx))
	})
}

// TestMutexAcquireIsOneCommand shows the SETNX-then-EXPIRE crash window of
// seeds 000/001 cannot exist: TryLock sends exactly one command that sets the
// key and its expiry together, and no lock is ever seen without a TTL.
func TestMutexAcquireIsOneCommand(t *testing.T) {
	deployments(t, func(ctx context.Context, t *testing.T, c *Client) {
		// Warm the script cache: the very first run of a script on a node
		// is EVALSHA, NOSCRIPT, EVAL.
		w, err := c.TryLock(ctx, "one", time.Minute, WithFencing())
		require.NoError(t, err)
		require.NoError(t, w.Unlock(ctx))
		hook := &locktest.Commands{}
		c.rdb.AddHook(hook)

		m, err := c.TryLock(ctx, "one", 1500*time.Millisecond)
		require.NoError(t, err)
		cmds := hook.Take()
		require.Len(t, cmds, 1)
		assert.Equal(t, []any{"set", m.Key(), m.Token(), "px", int64(1500), "nx"}, cmds[0])

		require.NoError(t, m.Unlock(ctx))
		cmds = hook.Take()
		require.Len(t, cmds, 1, "unlock is one round trip")
		assert.Equal(t, "evalsha", cmds[0][0])

		f, err := c.TryLock(ctx, "one", time.Minute, WithFencing())
		require.NoError(t, err)
		cmds = hook.Take()
		require.Len(t, cmds, 1, "fenced acquire is one script")
		assert.Equal(t, "evalsha", cmds[0][0])
		require.NoError(t, f.Unlock(ctx))
		hook.Take()

		for i := range 200 {
			m, err := c.TryLock(ctx, fmt.Sprint("many:", i), time.Minute, func(o *options) { o.fencing = i%2 == 0 })
			require.NoError(t, err)
			assert.Positive(t, pttl(t, c.rdb, m.Key()), "a lock never exists without a TTL")
		}
	})
}

func TestMutexFencing(t *testing.T) {
	deployments(t, func(ctx context.Context, t *testing.T, c *Client) {
		var last int64
		for range 5 {
			m, err := c.TryLock(ctx, "{sku:7}", time.Minute, WithFencing())
			require.NoError(t, err)
			assert.Greater(t, m.Fence(), last)
			last = m.Fence()
			_, err = c.TryLock(ctx, "{sku:7}", time.Minute, WithFencing())
			require.ErrorIs(t, err, ErrNotObtained)
			require.NoError(t, m.Unlock(ctx))
		}
		// A caller's own script verifies ownership in the same slot.
		verify := redis.NewScript(`
			if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
			return redis.call('INCRBY', KEYS[2], 1)`)
		m, err := c.TryLock(ctx, "{sku:7}", time.Minute, WithFencing())
		require.NoError(t, err)
		stock := strings.TrimSuffix(m.Key(), "lock:{sku:7}") + "{sku:7}:sold"
		n, err := verify.Run(ctx, c.rdb, []string{m.Key(), stock}, m.Token()).Int64()
		require.NoError(t, err)
		assert.EqualValues(t, 1, n)
		n, err = verify.Run(ctx, c.rdb, []string{m.Key(), stock}, "not-the-token").Int64()
		require.NoError(t, err)
		assert.EqualValues(t, 0, n)
		require.NoError(t, m.Unlock(ctx))
	})
}

func TestMutexWaitErrors(t *testing.T) {
	deployments(t, func(ctx context.Context, t *testing.T, c *Client) {
		m, err := c.TryLock(ctx, "busy", time.Minute)
		require.NoError(t, err)
		defer m.Unlock(ctx)

		_, err = c.TryLock(ctx, "busy", time.Minute)
		assert.ErrorIs(t, err, ErrNotObtained)

		_, err = c.Lock(ctx, "busy", time.Minute, WithWait(30*time.Millisecond))
		assert.ErrorIs(t, err, ErrWaitTimeout)
		assert.ErrorIs(t, err, ErrNotObtained)
		assert.NotErrorIs(t, err, errRetriesExhausted)

		_, err = c.Lock(ctx, "busy", time.Minute, withMaxRetries(3))
		assert.ErrorIs(t, err, errRetriesExhausted)
		assert.ErrorIs(t, err, ErrNotObtained)
		assert.NotErrorIs(t, err, ErrWaitTimeout)

		cctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(20*time.Millisecond, cancel)
		_, err = c.Lock(cctx, "busy", time.Minute)
		assert.ErrorIs(t, err, ErrNotObtained)
		assert.ErrorIs(t, err, context.Canceled)

		dctx, dcancel := context.WithTimeout(ctx, 20*time.Millisecond)
		defer dcancel()
		_, err = c.Lock(dctx, "busy", time.Minute)
		assert.ErrorIs(t, err, ErrNotObtained)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	})
}

// TestMutexPubSubWakeup: the waiter's backoff is far longer than its wait
// budget, so only the release message can let it in.
func TestMutexPubSubWakeup(t *testing.T) {
	deployments(t, func(ctx context.Context, t *testing.T, c *Client) {
		m, err := c.TryLock(ctx, "wake", time.Minute)
		require.NoError(t, err)

		slow := WithBackoff(time.Hour, time.Hour)
		const waiters = 5
		got := make(chan *Lease, waiters)
		errs := make(chan error, waiters)
		for range waiters {
			go func() {
				w, err := c.Lock(ctx, "wake", time.Minute, slow, WithWait(20*time.Second))
				if err != nil {
					errs <- err
					return
				}
				got <- w
			}()
		}
		// One subscriber for all local waiters: the Client shares one
		// pub/sub connection.
		locktest.Eventually(t, 10*time.Second, "waiters subscribed", func() bool {
			return c.notify.count(m.Key()) == waiters &&
				locktest.NumSub(t, c.rdb, m.Key()) == 1
		})
		require.NoError(t, m.Unlock(ctx))
		for range waiters {
			select {
			case w := <-got:
				require.NoError(t, w.Unlock(ctx))
			case err := <-errs:
				t.Fatal(err)
			}
		}
		locktest.Eventually(t, 10*time.Second, "channel unsubscribed", func() bool {
			return locktest.NumSub(t, c.rdb, m.Key()) == 0
		})
	})
}

func TestMutexBackoffFallback(t *testing.T) {
	deployments(t, func(ctx context.Context, t *testing.T, c *Client) {
		m, err := c.TryLock(ctx, "poll", time.Minute)
		require.NoError(t, err)
		done := make(chan error, 1)
		go func() {
			w, err := c.Lock(ctx, "poll", time.Minute, withoutWakeup(),
				WithBackoff(time.Millisecond, 5*time.Millisecond))
			if err == nil {
				err = w.Unlock(ctx)
			}
			done <- err
		}()
		time.Sleep(20 * time.Millisecond)
		assert.Zero(t, locktest.NumSub(t, c.rdb, m.Key()), "WithoutWakeup does not subscribe")
		require.NoError(t, m.Unlock(ctx))
		require.NoError(t, <-done)
	})
}

func TestMutexClosedClient(t *testing.T) {
	c, _ := newTestClient(t, false)
	ctx := locktest.Context(t, 30*time.Second)
	m, err := c.TryLock(ctx, "c", time.Minute, WithWatchdog(0))
	require.NoError(t, err)
	require.NoError(t, c.Close())
	_, err = c.TryLock(ctx, "d", time.Minute)
	assert.ErrorIs(t, err, ErrClosed)
	require.NoError(t, m.Unlock(ctx), "a handle can still release after Close")
	require.NoError(t, c.Close(), "Close twice")
}

func TestErrorsAreDistinct(t *testing.T) {
	errs := []error{ErrNotObtained, ErrWaitTimeout, errRetriesExhausted, ErrNotHeld, ErrLockLost,
		ErrReleased, ErrInvalidName, ErrInvalidTTL, ErrClosed}
	for i, a := range errs {
		assert.True(t, strings.HasPrefix(a.Error(), "lock: "), a)
		for j, b := range errs {
			//nolint:errorlint // the table compares the sentinels themselves
			want := i == j || (b == ErrNotObtained && (a == ErrWaitTimeout || a == errRetriesExhausted))
			assert.Equal(t, want, errors.Is(a, b), "%v is %v", a, b)
		}
	}
}

// TestMutexTwoClients: two Clients, each with its own pub/sub connection,
// stand for two processes contending for one lock.
func TestMutexTwoClients(t *testing.T) {
	deployments(t, func(ctx context.Context, t *testing.T, c *Client) {
		c2 := peer(t, c)
		contend(ctx, t, "shared", 40, c, c2)
	})
}

// TestCloseStopsWaitersAndPubSub: Close returns only after the pub/sub
// goroutine has stopped, and a waiting Lock returns ErrClosed.
func TestCloseStopsWaitersAndPubSub(t *testing.T) {
	c, rdb := newTestClient(t, false)
	ctx := locktest.Context(t, 30*time.Second)
	m, err := c.TryLock(ctx, "held", time.Minute)
	require.NoError(t, err)
	got := make(chan error, 1)
	go func() {
		_, err := c.Lock(ctx, "held", time.Minute, WithBackoff(time.Hour, time.Hour))
		got <- err
	}()
	locktest.Eventually(t, 10*time.Second, "waiter subscribed", func() bool { return locktest.NumSub(t, rdb, m.Key()) == 1 })
	require.NoError(t, c.Close())
	assert.ErrorIs(t, <-got, ErrClosed)
	locktest.Eventually(t, 10*time.Second, "pub/sub connection gone", func() bool { return locktest.NumSub(t, rdb, m.Key()) == 0 })
	require.NoError(t, m.Unlock(ctx))
}
