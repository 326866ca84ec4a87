package queue_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/queue"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testutil"
)

// callTimer records the round-trip time and argument count of every command.
type callTimer struct {
	mu    sync.Mutex
	times []time.Duration
	args  int
}

func (h *callTimer) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *callTimer) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *callTimer) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmd)
		d := time.Since(start)
		h.mu.Lock()
		h.times = append(h.times, d)
		h.args = max(h.args, len(cmd.Args()))
		h.mu.Unlock()
		return err
	}
}

// TestBacklogDrainsInBoundedCalls fills a queue with 200,000 due tasks and
// drains it; every script stays bounded in work (MaxClaim tasks per claim,
// 256 per enqueue script), so no single call blocks Redis for long. It runs
// on a private redis-server so that its SLOWLOG and command statistics hold
// exactly this test's calls. Assertions are on work size (tasks per claim,
// arguments per call, commands per round); durations, inside Redis and
// round trips, are logged only, so a noisy machine cannot fail the test.
func TestBacklogDrainsInBoundedCalls(t *testing.T) {
	const backlog = 200_000
	srv := testsvc.StartRedisServer(t)
	c := srv.Client()
	q, err := queue.New(c, "backlog", queue.Options{})
	require.NoError(t, err)
	timer := &callTimer{}
	c.AddHook(timer)
	ctx := testutil.Context(t, 60*time.Second)
	// Log every command, scripts and the commands inside them, slower than 500µs.
	require.NoError(t, c.ConfigSet(ctx, "slowlog-max-len", "100000").Err())
	require.NoError(t, c.ConfigSet(ctx, "slowlog-log-slower-than", "500").Err())
	require.NoError(t, c.SlowLogReset(ctx).Err())

	batch := make([]queue.Task, 0, 256)
	for i := range backlog {
		batch = append(batch, queue.Task{ID: fmt.Sprintf("b%06d", i), Type: "order", Payload: []byte(`{"sku":42,"user":1234567}`)})
		if len(batch) == cap(batch) || i == backlog-1 {
			_, err := q.EnqueueBatch(ctx, batch)
			require.NoError(t, err)
			batch = batch[:0]
		}
	}
	enqueueCalls := len(timer.times)
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(backlog), st.Due)

	require.NoError(t, c.ConfigResetStat(ctx).Err())
	drained, claims := 0, 0
	for {
		got, err := q.Claim(ctx, queue.MaxClaim*10, time.Minute)
		require.NoError(t, err)
		if len(got) == 0 {
			break
		}
		require.LessOrEqual(t, len(got), queue.MaxClaim, "claim size is capped")
		claims++
		stale, err := q.AckBatch(ctx, got)
		require.NoError(t, err)
		require.Empty(t, stale)
		drained += len(got)
	}
	assert.Equal(t, backlog, drained)
	assert.Equal(t, backlog/queue.MaxClaim, claims)

	// Work size: the Redis commands run per claim+ack round (scripts and the
	// commands inside them) do not grow with the batch or the backlog.
	stats, err := c.Info(ctx, "commandstats").Result()
	require.NoError(t, err)
	commands := 0
	for _, line := range strings.Split(stats, "\n") {
		if _, rest, ok := strings.Cut(line, ":calls="); ok {
			n, err := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			require.NoError(t, err)
			commands += n
		}
	}
	t.Logf("draining: %d Redis commands for %d claim+ack rounds (%.1f per round)", commands, claims+1, float64(commands)/float64(claims+1))
	assert.LessOrEqual(t, commands, 20*(claims+1), "a constant number of commands per round")

	logs, err := c.SlowLogGet(ctx, -1).Result()
	require.NoError(t, err)
	var slowest redis.SlowLog
	var durations []time.Duration
	for _, l := range logs {
		if len(l.Args) > 0 && (l.Args[0] == "evalsha" || l.Args[0] == "eval") {
			durations = append(durations, l.Duration)
			if l.Duration > slowest.Duration {
				slowest = l
			}
		}
	}
	slices.Sort(durations)
	scripts := len(durations)
	// Wall time inside Redis is only reported: on a loaded machine the server
	// itself can be descheduled mid-script, which no bound can rule out.
	if scripts > 0 {
		t.Logf("inside Redis: %d scripts took over 500µs; median of those %v, slowest %v (%s, %d args)",
			scripts, durations[scripts/2], slowest.Duration, slowest.Args[0], len(slowest.Args))
	}

	timer.mu.Lock()
	defer timer.mu.Unlock()
	all := slices.Clone(timer.times)
	slices.Sort(all)
	p99 := all[len(all)*99/100]
	t.Logf("client round trips (race detector included): %d calls (%d enqueue scripts of 256, %d claims of %d + acks): max %v, p99 %v, max args %d",
		len(all), enqueueCalls, claims, queue.MaxClaim, all[len(all)-1], p99, timer.args)
	// The largest call is one enqueue script of 256 tasks: EVALSHA sha numkeys,
	// 4 keys, now and 5 arguments per task.
	assert.LessOrEqual(t, timer.args, 3+4+1+5*256, "no call carries more than a bounded batch")
}
