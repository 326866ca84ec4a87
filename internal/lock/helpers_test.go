package lock

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/testsvc"
)

// deployments runs f once against standalone Redis and once against the
// 3-master Cluster.
func deployments(t *testing.T, f func(t *testing.T, c *Client, rdb redis.UniversalClient)) {
	t.Helper()
	for _, tc := range []struct {
		name    string
		cluster bool
	}{{"standalone", false}, {"cluster", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, rdb := newTestClient(t, tc.cluster, Options{})
			f(t, c, rdb)
		})
	}
}

func newTestClient(t testing.TB, cluster bool, opts Options) (*Client, redis.UniversalClient) {
	t.Helper()
	rdb, prefix := testsvc.Universal(t, cluster)
	opts.Prefix = prefix
	c := New(rdb, opts)
	t.Cleanup(func() { _ = c.Close() })
	return c, rdb
}

// locker is what a Client and a Redlock have in common.
type locker interface {
	Lock(ctx context.Context, name string, ttl time.Duration, opts ...Option) (*Mutex, error)
}

// contend runs n goroutines that take the lock name in turn through a
// and b (standing for two processes), each incrementing a counter the
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
			m, err := l.Lock(ctx, name, 10*time.Second, WithWaitTimeout(20*time.Second))
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

// cmdCounter is a go-redis hook that records every command sent.
type cmdCounter struct {
	mu   sync.Mutex
	cmds [][]any
}

func (h *cmdCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *cmdCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.mu.Lock()
		h.cmds = append(h.cmds, cmd.Args())
		h.mu.Unlock()
		return next(ctx, cmd)
	}
}
func (h *cmdCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.mu.Lock()
		for _, c := range cmds {
			h.cmds = append(h.cmds, c.Args())
		}
		h.mu.Unlock()
		return next(ctx, cmds)
	}
}

func (h *cmdCounter) take() [][]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.cmds
	h.cmds = nil
	return c
}

func pttl(t *testing.T, rdb redis.UniversalClient, key string) time.Duration {
	t.Helper()
	d, err := rdb.PTTL(context.Background(), key).Result()
	require.NoError(t, err)
	return d
}
