package queue_test

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/queue"
	"github.com/seckill/seckill/internal/testsvc"
)

// clock is a settable clock for Options.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.UnixMilli(1_800_000_000_000)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// onBoth runs f against standalone Redis and against the Cluster.
func onBoth(t *testing.T, f func(t *testing.T, cluster bool)) {
	t.Helper()
	for _, cluster := range []bool{false, true} {
		name := "standalone"
		if cluster {
			name = "cluster"
		}
		t.Run(name, func(t *testing.T) { f(t, cluster) })
	}
}

// newQueue returns a queue named name under the test's own prefix.
func newQueue(t *testing.T, cluster bool, name string, o queue.Options) (*queue.Queue, redis.UniversalClient) {
	t.Helper()
	c, prefix := testsvc.Universal(t, cluster)
	o.Prefix = prefix
	q, err := queue.New(c, name, o)
	require.NoError(t, err)
	return q, c
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func bufLogger() (*slog.Logger, *syncBuffer) {
	b := &syncBuffer{}
	return slog.New(slog.NewTextHandler(b, nil)), b
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func task(id string) queue.Task {
	return queue.Task{ID: id, Type: "order", Payload: []byte("p-" + id)}
}

func newClient(t *testing.T, cluster bool) (redis.UniversalClient, string) {
	t.Helper()
	return testsvc.Universal(t, cluster)
}
