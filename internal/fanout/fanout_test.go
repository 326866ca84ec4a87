package fanout

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testutil"
)

// wakeOneUnlessAll is the lock's policy: payload "a" wakes all, others one.
func wakeOneUnlessAll(payload string) bool { return payload != "a" }

func pending(c chan struct{}) bool {
	select {
	case <-c:
		c <- struct{}{} // put it back
		return true
	default:
		return false
	}
}

func newChan() chan struct{} { return make(chan struct{}, 1) }

// TestWakeOneRotatesAndPassesOn: a wake-one message wakes the waiter waiting
// longest without a pending wake-up; a wake-all message wakes all; a wake-up
// left unused by a waiter that leaves goes to the next one.
func TestWakeOneRotatesAndPassesOn(t *testing.T) {
	h := New(nil, Options{WakeOne: wakeOneUnlessAll})
	h.closed = true // no pub/sub connection in this unit test
	c1, c2, c3 := newChan(), newChan(), newChan()
	w1 := &Waiter{hub: h, channel: "c", c: c1}
	w2 := &Waiter{hub: h, channel: "c", c: c2}
	w3 := &Waiter{hub: h, channel: "c", c: c3}
	h.chans["c"] = []*Waiter{w1, w2, w3}

	h.deliver("c", "1")
	assert.Equal(t, []bool{true, false, false}, []bool{pending(c1), pending(c2), pending(c3)})
	h.deliver("c", "1")
	assert.Equal(t, []bool{true, true, false}, []bool{pending(c1), pending(c2), pending(c3)})

	// w2 leaves without using its wake-up: w3 gets it.
	w2.Remove()
	assert.True(t, pending(c3))
	assert.Equal(t, 2, h.Count("c"))

	<-c1
	<-c3
	h.deliver("c", "a")
	assert.True(t, pending(c1))
	assert.True(t, pending(c3))

	w1.Remove()
	w1.Remove() // idempotent
	w3.Remove()
	assert.Zero(t, h.Count("c"))
	h.deliver("nobody", "1") // no waiters: nothing happens
}

// TestWakeAllPassesNothingOn: without WakeOne, a waiter that leaves keeps its
// wake-up to itself (the others got the same message).
func TestWakeAllPassesNothingOn(t *testing.T) {
	h := New(nil, Options{})
	h.closed = true
	c1, c2 := newChan(), newChan()
	w1 := &Waiter{hub: h, channel: "c", c: c1}
	h.chans["c"] = []*Waiter{w1, {hub: h, channel: "c", c: c2}}
	c1 <- struct{}{}
	w1.Remove()
	assert.False(t, pending(c2))
	assert.True(t, pending(c1))
}

// deployments runs f on standalone Redis and on the Cluster, with a context
// that ends after 30 seconds or with the subtest.
func deployments(t *testing.T, f func(ctx context.Context, t *testing.T, rdb redis.UniversalClient, prefix string)) {
	t.Helper()
	testsvc.Deployments(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		f(testutil.Context(t, 30*time.Second), t, rdb, prefix)
	})
}

// newHub returns a Hub on rdb, closed when the test ends.
func newHub(t *testing.T, rdb redis.UniversalClient, opts Options) *Hub {
	t.Helper()
	h := New(rdb, opts)
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// subscribers waits until channel has n subscribers in Redis.
func subscribers(t *testing.T, rdb redis.UniversalClient, channel string, n int64) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, fmt.Sprintf("%d subscribers of %s", n, channel), func() bool {
		return testsvc.NumSub(t, rdb, channel) == n
	})
}

func woken(t *testing.T, c chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(10 * time.Second):
		t.Fatalf("not woken: %s", what)
	}
}

func notWoken(t *testing.T, c chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
		t.Fatalf("woken: %s", what)
	case <-time.After(50 * time.Millisecond):
	}
}

// TestOneConnectionWakesAllAndUnsubscribes: waiters on two channels share
// one subscriber connection; a message wakes every waiter of its channel and
// no other; a channel is unsubscribed when its last waiter leaves, and Close
// drops the connection.
func TestOneConnectionWakesAllAndUnsubscribes(t *testing.T) {
	deployments(t, func(ctx context.Context, t *testing.T, rdb redis.UniversalClient, prefix string) {
		h := New(rdb, Options{})
		chA, chB := prefix+"a", prefix+"b"
		a1, a2, b := newChan(), newChan(), newChan()
		wa1, err := h.Add(ctx, chA, a1)
		require.NoError(t, err)
		wa2, err := h.Add(ctx, chA, a2)
		require.NoError(t, err)
		wb, err := h.Add(ctx, chB, b)
		require.NoError(t, err)
		assert.Equal(t, 2, h.Count(chA))
		subscribers(t, rdb, chA, 1)
		subscribers(t, rdb, chB, 1)
		notWoken(t, a1, "no subscription wake-ups unless asked for")

		require.NoError(t, rdb.Publish(ctx, chA, "x").Err())
		woken(t, a1, "a1")
		woken(t, a2, "a2")
		notWoken(t, b, "b: other channel")

		wa1.Remove()
		assert.Equal(t, int64(1), testsvc.NumSub(t, rdb, chA), "a2 still waits")
		wa2.Remove()
		subscribers(t, rdb, chA, 0)
		require.NoError(t, rdb.Publish(ctx, chB, "x").Err())
		woken(t, b, "b")

		require.NoError(t, h.Close())
		subscribers(t, rdb, chB, 0)
		wb.Remove() // still allowed
		_, err = h.Add(ctx, chB, b)
		require.ErrorIs(t, err, ErrClosed)
		require.NoError(t, h.Close())
	})
}

// TestWakeOneOverRedis: with WakeOne, a release message wakes one waiter at
// a time, oldest first, and a wake-all message wakes all; the subscription
// confirmation wakes the waiters already there.
func TestWakeOneOverRedis(t *testing.T) {
	deployments(t, func(ctx context.Context, t *testing.T, rdb redis.UniversalClient, prefix string) {
		h := newHub(t, rdb, Options{WakeOne: wakeOneUnlessAll, WakeOnSubscribe: true})
		ch := prefix + "lock"
		cs := []chan struct{}{newChan(), newChan(), newChan()}
		for i, c := range cs {
			w, err := h.Add(ctx, ch, c)
			require.NoError(t, err)
			t.Cleanup(w.Remove)
			if i == 0 {
				// Wait for the one confirmation, so that it cannot wake
				// the others in the middle of what follows.
				woken(t, c, "subscription confirmed")
			}
		}
		subscribers(t, rdb, ch, 1)

		require.NoError(t, rdb.Publish(ctx, ch, "1").Err())
		woken(t, cs[0], "first release: oldest waiter")
		notWoken(t, cs[1], "second waiter")
		notWoken(t, cs[2], "third waiter")
		require.NoError(t, rdb.Publish(ctx, ch, "1").Err())
		woken(t, cs[1], "second release: next waiter")
		notWoken(t, cs[2], "third waiter")
		require.NoError(t, rdb.Publish(ctx, ch, "a").Err())
		for _, c := range cs {
			woken(t, c, "wake-all")
		}
	})
}

// TestListenGetsPayloads: a listener gets every payload in order, next to
// the waiters of the same channel.
func TestListenGetsPayloads(t *testing.T) {
	deployments(t, func(ctx context.Context, t *testing.T, rdb redis.UniversalClient, prefix string) {
		h := newHub(t, rdb, Options{WakeOnSubscribe: true})
		ch := prefix + "back"
		got := make(chan string, 10)
		l, err := h.Listen(ctx, ch, func(p string) { got <- p })
		require.NoError(t, err)
		c := newChan()
		w, err := h.Add(ctx, ch, c)
		require.NoError(t, err)
		subscribers(t, rdb, ch, 1)
		for _, p := range []string{"7", "8", "9"} {
			require.NoError(t, rdb.Publish(ctx, ch, p).Err())
		}
		// In any order: a Cluster relays a PUBLISH that reached another
		// node over its bus, so publishes sent to different nodes may
		// arrive out of order.
		var payloads []string
		for range 3 {
			select {
			case p := <-got:
				payloads = append(payloads, p)
			case <-time.After(10 * time.Second):
				t.Fatalf("payloads delivered: %v of 7, 8, 9", payloads)
			}
		}
		assert.ElementsMatch(t, []string{"7", "8", "9"}, payloads)
		woken(t, c, "waiter next to the listener")
		l.Remove()
		w.Remove()
		subscribers(t, rdb, ch, 0)
		assert.Empty(t, got, "subscription confirmations are not passed to listeners")
	})
}

// TestResubscribesAfterDisconnect: when the subscriber connection is killed,
// or Redis restarts, go-redis reconnects and the Hub's channels are
// subscribed again; the confirmation wakes the waiters (WakeOnSubscribe) and
// messages flow again.
func TestResubscribesAfterDisconnect(t *testing.T) {
	srv := testsvc.StartRedisServer(t)
	rdb := srv.Client()
	ctx := testutil.Context(t, 30*time.Second)
	h := newHub(t, rdb, Options{WakeOnSubscribe: true})
	const ch = "resub"
	c := newChan()
	w, err := h.Add(ctx, ch, c)
	require.NoError(t, err)
	defer w.Remove()
	woken(t, c, "first subscription confirmed")

	require.NoError(t, rdb.ClientKillByFilter(ctx, "TYPE", "pubsub").Err())
	woken(t, c, "subscription confirmed again after the connection was killed")
	require.NoError(t, rdb.Publish(ctx, ch, "x").Err())
	woken(t, c, "message after reconnect")

	srv.Kill()
	srv.Start()
	woken(t, c, "subscription confirmed again after Redis restarted")
	require.NoError(t, rdb.Publish(ctx, ch, "x").Err())
	woken(t, c, "message after restart")
}

// TestSubscribeFailureKeepsTheWaiter: a SUBSCRIBE that cannot be sent is
// reported, but the waiter stays registered (go-redis subscribes it when it
// connects) until the caller removes it.
func TestSubscribeFailureKeepsTheWaiter(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(testsvc.FreePort(t))})
	t.Cleanup(func() { _ = rdb.Close() })
	h := newHub(t, rdb, Options{Timeout: 200 * time.Millisecond})
	w, err := h.Add(testutil.Context(t, 30*time.Second), "nowhere", newChan())
	require.Error(t, err)
	require.NotNil(t, w)
	assert.Equal(t, 1, h.Count("nowhere"))
	w.Remove()
	assert.Zero(t, h.Count("nowhere"))
}
