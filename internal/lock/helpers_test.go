package lock

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
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

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// eventually waits for cond without asserting how long it takes, only that
// it happens before a generous limit.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never happened: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func closedWithin(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("never happened: %s", what)
	}
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
