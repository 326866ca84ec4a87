package lock

import (
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/lock/internal/locktest"
)

func TestRedlockFiveServers(t *testing.T) {
	t.Parallel()
	nodes, prefix := redlockNodes(t)
	r := newTestRedlock(t, nodes, prefix)
	ctx := locktest.Context(t, 30*time.Second)
	assert.Equal(t, 3, r.quorum())

	m, err := r.TryLock(ctx, "pay", time.Minute)
	require.NoError(t, err)
	assert.Equal(t, len(nodes), countHolding(ctx, nodes, m.Key(), m.Token()))
	v := m.validity()
	assert.Less(t, v, time.Minute-time.Duration(0.01*float64(time.Minute)), "validity leaves the drift allowance")
	assert.Greater(t, v, 50*time.Second)
	ttl, err := m.TTL(ctx)
	require.NoError(t, err)
	assert.Greater(t, ttl, 50*time.Second)
	held, err := m.heldIn(ctx)
	require.NoError(t, err)
	assert.True(t, held)

	_, err = r.TryLock(ctx, "pay", time.Minute)
	assert.ErrorIs(t, err, ErrNotObtained)
	_, err = r.Lock(ctx, "pay", time.Minute, withMaxRetries(2))
	assert.ErrorIs(t, err, errRetriesExhausted)

	require.NoError(t, m.Extend(ctx, 2*time.Minute))
	for _, c := range nodes {
		assert.Greater(t, c.PTTL(ctx, m.Key()).Val(), 100*time.Second)
	}
	require.NoError(t, m.Unlock(ctx))
	assert.Zero(t, countHolding(ctx, nodes, m.Key(), m.Token()), "released on all nodes")
	assert.ErrorIs(t, m.Unlock(ctx), ErrNotHeld)

	// Contention across "processes": two Redlocks on the same nodes.
	r2 := newTestRedlock(t, nodes, prefix)
	contend(ctx, t, "count", 10, r, r2)
}

// TestRedlockNodesDown kills private servers: with 2 of 5 down a quorum of 3
// still locks; with 3 down nothing can, and no lock is left on the live ones.
func TestRedlockNodesDown(t *testing.T) {
	t.Parallel()
	var srvs []*locktest.Server
	var nodes []redis.UniversalClient
	for range 5 {
		s, c := killableNode(t)
		srvs = append(srvs, s)
		nodes = append(nodes, c)
	}
	// A generous node timeout (still far below the TTL): a busy CI box must
	// not turn a live node into a missing vote.
	prefix := locktest.Prefix(t)
	r := newTestRedlock(t, nodes, prefix)
	ctx := locktest.Context(t, 30*time.Second)

	srvs[0].Kill()
	srvs[1].Kill()
	m, err := r.TryLock(ctx, "q", time.Minute)
	require.NoError(t, err, "quorum with 2 of 5 nodes down")
	assert.Equal(t, 3, countHolding(ctx, nodes[2:], m.Key(), m.Token()))
	require.NoError(t, m.Extend(ctx, time.Minute), "extend with a quorum")
	require.NoError(t, m.Unlock(ctx))
	assert.Zero(t, countHolding(ctx, nodes[2:], m.Key(), m.Token()))

	srvs[2].Kill()
	_, err = r.TryLock(ctx, "q", time.Minute)
	require.ErrorIs(t, err, ErrNotObtained)
	for _, c := range nodes[3:] {
		assert.Zero(t, c.Exists(ctx, prefix+"lock:{q}").Val(), "no lock left behind on a live node")
	}
	_, err = r.Lock(ctx, "q", time.Minute, WithWait(50*time.Millisecond))
	require.ErrorIs(t, err, ErrWaitTimeout)

	// A held lock whose nodes fail below quorum can no longer be extended.
	srvs[2].Start()
	// go-redis keeps answering with the last dial error for a moment after
	// a node comes back.
	locktest.Eventually(t, 10*time.Second, "node back", func() bool { return nodes[2].Ping(ctx).Err() == nil })
	m, err = r.TryLock(ctx, "held", time.Minute)
	require.NoError(t, err)
	srvs[3].Kill()
	assert.Error(t, m.Extend(ctx, time.Minute))
}

// TestRedlockValidityCountsElapsedTime injects a clock that moves on every
// reading, as if each round took long: the validity shrinks by the elapsed
// time and the drift, and a round slower than the TTL fails and cleans up.
func TestRedlockValidityCountsElapsedTime(t *testing.T) {
	t.Parallel()
	nodes, prefix := redlockNodes(t)
	for _, c := range nodes {
		// Every node takes 5ms per command and gives up when the context
		// does: the release after a late round must still get through
		// (it once ran with a 1ms budget).
		c.AddHook(slowNode{5 * time.Millisecond})
	}
	clock := locktest.NewClock(time.Date(2026, 11, 11, 0, 0, 0, 0, time.UTC))
	var step time.Duration
	var readings []time.Time
	var mu sync.Mutex
	now := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		clock.Advance(step)
		readings = append(readings, clock.Now())
		return clock.Now()
	}
	setStep := func(d time.Duration) { mu.Lock(); step = d; readings = nil; mu.Unlock() }
	r := newTestRedlock(t, nodes, prefix, withClock(now), withRedlockTiming(time.Second, 0.01))
	ctx := locktest.Context(t, 30*time.Second)

	const ttl = 10 * time.Second
	drift := ttl/100 + 2*time.Millisecond
	setStep(2 * time.Second) // every clock reading is 2s after the previous one
	m, err := r.TryLock(ctx, "v", ttl)
	require.NoError(t, err)
	mu.Lock()
	start := readings[1] // readings: call start, round start, round end, ...
	step = 0
	mu.Unlock()
	// The lock is valid until round start + TTL − drift, by the local clock;
	// the 2s the round took are gone from it.
	assert.Equal(t, start.Add(ttl-drift).Sub(clock.Now()), m.validity())
	assert.LessOrEqual(t, m.validity(), ttl-2*time.Second-drift)
	require.NoError(t, m.Unlock(ctx))

	setStep(11 * time.Second) // slower than the TTL
	_, err = r.TryLock(ctx, "v", 10*time.Second)
	require.ErrorIs(t, err, ErrNotObtained)
	setStep(0)
	for _, c := range nodes {
		assert.Zero(t, c.Exists(ctx, prefix+"lock:{v}").Val(), "released on all nodes after a late round")
	}
}

func TestRedlockBadInput(t *testing.T) {
	r := newTestRedlock(t, nil, "")
	ctx := t.Context()
	_, err := r.TryLock(ctx, "", time.Second)
	assert.ErrorIs(t, err, ErrInvalidName)
	_, err = r.TryLock(ctx, "x", 0)
	assert.ErrorIs(t, err, ErrInvalidTTL)
	_, err = r.TryLock(ctx, "x", 2*time.Millisecond)
	assert.ErrorIs(t, err, ErrInvalidTTL, "a TTL that the drift allowance eats")
}

func TestRedlockWatchdog(t *testing.T) {
	t.Parallel()
	nodes, prefix := redlockNodes(t)
	r := newTestRedlock(t, nodes, prefix)
	ctx := locktest.Context(t, 30*time.Second)
	m := keptAlive(ctx, t, r, "wd")
	require.NoError(t, m.Unlock(ctx))
	assert.Zero(t, countHolding(ctx, nodes, m.Key(), m.Token()))
}
