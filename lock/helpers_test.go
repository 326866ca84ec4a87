package lock

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/lock/internal/locktest"
)

// deployments runs f on standalone Redis and on the Cluster, with a Client
// under the subtest's own prefix and a context that ends after 30 seconds or
// with the subtest.
func deployments(t *testing.T, f func(ctx context.Context, t *testing.T, c *Client)) {
	t.Helper()
	locktest.Deployments(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		f(locktest.Context(t, 30*time.Second), t, clientOn(t, rdb, prefix))
	})
}

func newTestClient(t testing.TB, cluster bool, opts ...Option) (*Client, redis.UniversalClient) {
	t.Helper()
	rdb, prefix := locktest.Universal(t, cluster)
	return clientOn(t, rdb, prefix, opts...), rdb
}

// peer returns a second Client on the Redis of c with the same prefix:
// another process using the same locks.
func peer(t *testing.T, c *Client) *Client {
	t.Helper()
	c2 := New(c.rdb, WithPrefix(c.prefix))
	t.Cleanup(func() { _ = c2.Close() })
	return c2
}

// clientOn returns a Client on rdb whose keys start with the test's prefix
// and "lock:", closed when the test ends.
func clientOn(t testing.TB, rdb redis.UniversalClient, prefix string, opts ...Option) *Client {
	c := New(rdb, append([]Option{WithPrefix(prefix + "lock:")}, opts...)...)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// killableNode starts a Redis server of the test's own and returns it with a
// client that fails at once, without retrying, while the server is down.
func killableNode(t *testing.T) (*locktest.Server, *redis.Client) {
	t.Helper()
	s := locktest.StartServer(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1,
		DialTimeout: 50 * time.Millisecond, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	return s, c
}

// redlockNodes returns clients of the five Redlock servers and a key prefix
// of the test's own.
func redlockNodes(t *testing.T) ([]redis.UniversalClient, string) {
	t.Helper()
	cs, prefix := locktest.RedlockClients(t)
	nodes := make([]redis.UniversalClient, len(cs))
	for i, c := range cs {
		nodes[i] = c
	}
	return nodes, prefix
}

// newTestRedlock returns a Redlock whose keys start with prefix and "lock:",
// with a generous node timeout (still far below the tests' TTLs) so that a
// busy CI box does not turn a live node into a missing vote.
func newTestRedlock(t *testing.T, nodes []redis.UniversalClient, prefix string, opts ...Option) *Redlock {
	t.Helper()
	r := NewRedlock(nodes, append([]Option{WithPrefix(prefix + "lock:"), withRedlockTiming(time.Second, 0)}, opts...)...)
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// countHolding counts the nodes on which key holds token.
func countHolding(ctx context.Context, nodes []redis.UniversalClient, key, token string) int {
	n := 0
	for _, c := range nodes {
		if c.Get(ctx, key).Val() == token {
			n++
		}
	}
	return n
}

// locker is what a Client and a Redlock have in common.
type locker interface {
	TryLock(ctx context.Context, name string, ttl time.Duration, opts ...Option) (*Lease, error)
	Lock(ctx context.Context, name string, ttl time.Duration, opts ...Option) (*Lease, error)
}

// watchdogTTL is short enough that a lock without renewals would be gone
// within a test of the watchdog.
const watchdogTTL = 300 * time.Millisecond

// keptAlive takes name through l for watchdogTTL with the watchdog on and
// asserts that the lock is still held several TTLs later.
func keptAlive(ctx context.Context, t *testing.T, l locker, name string) *Lease {
	t.Helper()
	m, err := l.TryLock(ctx, name, watchdogTTL, WithWatchdog(0))
	require.NoError(t, err)
	time.Sleep(4 * watchdogTTL)
	held, err := m.heldIn(ctx)
	require.NoError(t, err)
	assert.True(t, held, "renewed past several TTLs")
	assert.NoError(t, m.Err())
	return m
}

// contend runs n goroutines that take the lock name in turn through a
// and b (two processes, or one Client twice), each incrementing a counter the
// lock alone guards, and asserts that no increment was lost.
func contend(ctx context.Context, t *testing.T, name string, n int, a, b locker) {
	t.Helper()
	counter := 0
	var wg sync.WaitGroup
	for i := range n {
		l := a
		if i%2 == 1 {
			l = b
		}
		wg.Go(func() {
			m, err := l.Lock(ctx, name, 10*time.Second, WithWait(20*time.Second))
			if !assert.NoError(t, err) {
				return
			}
			counter++
			assert.NoError(t, m.Unlock(ctx))
		})
	}
	wg.Wait()
	assert.Equal(t, n, counter)
}

// slowNode is a go-redis hook that delays every command and honours the
// context while it waits, like a slow node with context timeouts enabled.
type slowNode struct{ delay time.Duration }

func (h slowNode) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h slowNode) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		select {
		case <-time.After(h.delay):
		case <-ctx.Done():
			cmd.SetErr(ctx.Err())
			return ctx.Err()
		}
		return next(ctx, cmd)
	}
}

func (h slowNode) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func pttl(t *testing.T, rdb redis.UniversalClient, key string) time.Duration {
	t.Helper()
	d, err := rdb.PTTL(t.Context(), key).Result()
	require.NoError(t, err)
	return d
}

// recorder is an Observer that counts what it is told, by kind.
type recorder struct {
	mu       sync.Mutex
	acquired map[string]int
	failed   map[string][]error
	waits    map[string]int
	renewals map[string][2]int // failed, ok
	lost     map[string]int
}

func newRecorder() *recorder {
	return &recorder{acquired: map[string]int{}, failed: map[string][]error{}, waits: map[string]int{},
		renewals: map[string][2]int{}, lost: map[string]int{}}
}

func (r *recorder) Acquired(kind string, waited bool, _ time.Duration, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if waited {
		r.waits[kind]++
	}
	if err == nil {
		r.acquired[kind]++
	} else {
		r.failed[kind] = append(r.failed[kind], err)
	}
}

func (r *recorder) Renewed(kind string, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.renewals[kind]
	if ok {
		n[1]++
	} else {
		n[0]++
	}
	r.renewals[kind] = n
}

func (r *recorder) Lost(kind string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lost[kind]++
}

// get reads a count under the lock.
func (r *recorder) get(f func(r *recorder) int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return f(r)
}
