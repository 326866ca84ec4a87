package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/queue"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testutil"
)

// newQueue returns a queue named name under the test's own prefix.
func newQueue(t *testing.T, cluster bool, name string, o queue.Options) (*queue.Queue, redis.UniversalClient) {
	t.Helper()
	c, prefix := testsvc.Universal(t, cluster)
	o.Prefix = prefix
	q, err := queue.New(c, name, o)
	require.NoError(t, err)
	return q, c
}

func task(id string) queue.Task {
	return queue.Task{ID: id, Type: "order", Payload: []byte("p-" + id)}
}

func newClient(t *testing.T, cluster bool) (redis.UniversalClient, string) {
	t.Helper()
	return testsvc.Universal(t, cluster)
}

// clockedQueue is newQueue on a settable clock that starts at a fixed
// time, with a context bound to the test.
func clockedQueue(t *testing.T, cluster bool, name string, o queue.Options) (*queue.Queue, redis.UniversalClient, *testutil.Clock, context.Context) {
	t.Helper()
	clk := testutil.NewClock(time.UnixMilli(1_800_000_000_000))
	o.Now = clk.Now
	q, c := newQueue(t, cluster, name, o)
	return q, c, clk, testutil.Context(t, 60*time.Second)
}

// enqueue enqueues tasks one by one and requires that each call succeeds.
func enqueue(ctx context.Context, t *testing.T, q *queue.Queue, tasks ...queue.Task) {
	t.Helper()
	for _, task := range tasks {
		_, err := q.Enqueue(ctx, task)
		require.NoError(t, err)
	}
}

// claim claims up to n tasks of q leased for lease, and requires that it
// got want of them.
func claim(ctx context.Context, t *testing.T, q *queue.Queue, n int, lease time.Duration, want int) []*queue.Claimed {
	t.Helper()
	got, err := q.Claim(ctx, n, lease)
	require.NoError(t, err)
	require.Len(t, got, want)
	return got
}
