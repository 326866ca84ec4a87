package queue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/queue"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testutil"
)

// runConsumer runs c until the test ends or stop is called; stop waits for Run.
func runConsumer(t *testing.T, c *queue.Consumer) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			assert.NoError(t, <-done)
		})
	}
	t.Cleanup(stop)
	return stop
}

func TestConcurrentConsumers(t *testing.T) {
	const (
		tasks     = 20_000
		consumers = 8
	)
	testsvc.Backends(t, func(t *testing.T, cluster bool) {
		m := queue.NewMetrics("t")
		q, c := newQueue(t, cluster, "conc", queue.Options{
			Metrics: m,
			Backoff: func(int) time.Duration { return time.Millisecond },
		})
		waker := queue.NewWaker(c)
		defer waker.Close()

		var (
			mu       sync.Mutex
			holding  = map[string]bool{}
			handled  = map[string]int{}
			overlaps atomic.Int64
			failed   atomic.Int64
		)
		handler := queue.Each(func(_ context.Context, task *queue.Claimed) error {
			mu.Lock()
			if holding[task.ID] {
				overlaps.Add(1)
			}
			holding[task.ID] = true
			handled[task.ID]++
			first := handled[task.ID] == 1
			mu.Unlock()
			defer func() {
				mu.Lock()
				holding[task.ID] = false
				mu.Unlock()
			}()
			// Fail about 1% of first attempts to exercise retries.
			if first && len(task.ID)%7 == 0 && task.ID[len(task.ID)-1] == '3' {
				failed.Add(1)
				return errors.New("transient")
			}
			return nil
		})
		stops := make([]func(), 0, consumers)
		for range consumers {
			stops = append(stops, runConsumer(t, queue.NewConsumer(q, handler, queue.ConsumerOptions{
				BatchSize: 200, Lease: 30 * time.Second, MaxIdle: 200 * time.Millisecond, Waker: waker,
			})))
		}

		// Enqueue from 4 producers while the consumers run.
		ctx := testutil.Context(t, 60*time.Second)
		var prod sync.WaitGroup
		for p := range 4 {
			prod.Go(func() {
				for start := p * tasks / 4; start < (p+1)*tasks/4; start += 500 {
					batch := make([]queue.Task, 0, 500)
					for i := start; i < start+500; i++ {
						batch = append(batch, task(fmt.Sprintf("task-%d", i)))
					}
					_, err := q.EnqueueBatch(ctx, batch)
					assert.NoError(t, err)
				}
			})
		}
		prod.Wait()

		testutil.Eventually(t, 60*time.Second, "all tasks acked", func() bool {
			st, err := q.Stats(ctx)
			require.NoError(t, err)
			return st == queue.Stats{}
		})
		for _, stop := range stops {
			stop() // so every ack is counted before the checks
		}
		mu.Lock()
		defer mu.Unlock()
		assert.Zero(t, overlaps.Load(), "a task was held by two consumers at once")
		assert.Len(t, handled, tasks, "every task handled")
		assert.Positive(t, failed.Load())
		acked := counterValue(t, m, "t_queue_acked_total", q.Name())
		assert.Equal(t, float64(tasks), acked, "every task acked exactly once")
		t.Logf("handled %d tasks (%d failed once and were retried)", len(handled), failed.Load())
	})
}

func TestConsumerSettlesByHandlerResult(t *testing.T) {
	testsvc.Backends(t, func(t *testing.T, cluster bool) {
		q, _ := newQueue(t, cluster, "results", queue.Options{
			Backoff: func(int) time.Duration { return time.Hour },
		})
		ctx := testutil.Context(t, 60*time.Second)
		_, err := q.EnqueueBatch(ctx, []queue.Task{task("ok"), task("fail"), task("release"), task("z-missing")})
		require.NoError(t, err)
		seen := make(chan struct{})
		var once sync.Once
		h := func(_ context.Context, ts []*queue.Claimed) []error {
			out := make([]error, 0, len(ts))
			for _, t := range ts {
				switch t.ID {
				case "ok":
					out = append(out, nil)
				case "fail":
					out = append(out, errors.New("bad payload"))
				case "release":
					out = append(out, fmt.Errorf("shutting down: %w", queue.ErrRelease))
				}
			}
			once.Do(func() { close(seen) })
			return out // "z-missing", claimed last, has no result: nacked
		}
		stop := runConsumer(t, queue.NewConsumer(q, h, queue.ConsumerOptions{BatchSize: 10}))
		<-seen
		testutil.Eventually(t, 60*time.Second, "settled", func() bool {
			in, err := q.Inspect(ctx, "z-missing")
			return err == nil && in.State == queue.StatePending
		})
		stop()

		_, err = q.Inspect(ctx, "ok")
		assert.ErrorIs(t, err, queue.ErrNotFound, "acked")
		in, err := q.Inspect(ctx, "fail")
		require.NoError(t, err)
		assert.Equal(t, 1, in.Attempts)
		assert.Equal(t, "bad payload", in.LastError)
		assert.True(t, in.Due.After(time.Now().Add(30*time.Minute)), "retried with backoff")
		in, err = q.Inspect(ctx, "z-missing")
		require.NoError(t, err)
		assert.Contains(t, in.LastError, "no result")
		// The released task may have been claimed again before stop; if it
		// is pending now its attempt was not counted.
		if in, err = q.Inspect(ctx, "release"); err == nil && in.State == queue.StatePending {
			assert.Zero(t, in.Attempts)
		}
	})
}

func TestConsumerHandlerPanicNacks(t *testing.T) {
	q, _ := newQueue(t, false, "panic", queue.Options{Backoff: func(int) time.Duration { return time.Hour }})
	ctx := testutil.Context(t, 60*time.Second)
	enqueue(ctx, t, q, task("p"))
	h := func(context.Context, []*queue.Claimed) []error { panic("boom") }
	stop := runConsumer(t, queue.NewConsumer(q, h, queue.ConsumerOptions{}))
	testutil.Eventually(t, 60*time.Second, "nacked", func() bool {
		in, err := q.Inspect(ctx, "p")
		return err == nil && in.State == queue.StatePending && in.Attempts == 1
	})
	stop()
	in, err := q.Inspect(ctx, "p")
	require.NoError(t, err)
	assert.Contains(t, in.LastError, "panic: boom")
}

func TestConsumerGracefulShutdown(t *testing.T) {
	tests := []struct {
		name string
		// finish decides what the blocked handler does once shutdown starts.
		finish    func(ctx context.Context) error
		wantState queue.State // "" = acked and gone
	}{
		{"finishes within grace: acked", func(context.Context) error { return nil }, ""},
		{"overruns grace: released, attempt not counted", func(ctx context.Context) error {
			<-ctx.Done()
			return ctx.Err()
		}, queue.StatePending},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, _ := newQueue(t, false, "shutdown", queue.Options{})
			ctx := testutil.Context(t, 60*time.Second)
			_, err := q.EnqueueBatch(ctx, []queue.Task{task("a"), task("b")})
			require.NoError(t, err)
			started := make(chan struct{})
			release := make(chan struct{})
			var once sync.Once
			h := queue.Each(func(hctx context.Context, _ *queue.Claimed) error {
				once.Do(func() { close(started) })
				<-release
				return tt.finish(hctx)
			})
			stop := runConsumer(t, queue.NewConsumer(q, h, queue.ConsumerOptions{
				BatchSize: 10, ShutdownGrace: 50 * time.Millisecond,
			}))
			<-started
			stopped := make(chan struct{})
			go func() { stop(); close(stopped) }()
			close(release)
			<-stopped
			for _, id := range []string{"a", "b"} {
				in, err := q.Inspect(ctx, id)
				if tt.wantState == "" {
					assert.ErrorIs(t, err, queue.ErrNotFound, id)
					continue
				}
				require.NoError(t, err, id)
				assert.Equal(t, tt.wantState, in.State, id)
				assert.Zero(t, in.Attempts, id)
			}
		})
	}
}

func TestWakerWakesManyIdleQueues(t *testing.T) {
	const queues = 30
	testsvc.Backends(t, func(t *testing.T, cluster bool) {
		c, prefix := newClient(t, cluster)
		waker := queue.NewWaker(c)
		defer waker.Close()
		var handled atomic.Int64
		h := queue.Each(func(context.Context, *queue.Claimed) error { handled.Add(1); return nil })
		qs := make([]*queue.Queue, queues)
		for i := range qs {
			q, err := queue.New(c, fmt.Sprintf("{sku:%d}", i), queue.Options{Prefix: prefix})
			require.NoError(t, err)
			qs[i] = q
			// An hour of idle sleep: only the wake-up can make them claim. Half
			// of them linger after the wake-up before claiming.
			runConsumer(t, queue.NewConsumer(q, h, queue.ConsumerOptions{
				MaxIdle: time.Hour, Waker: waker, Linger: time.Duration(i%2) * time.Millisecond,
			}))
		}
		for _, q := range qs {
			testutil.Eventually(t, 60*time.Second, "subscribed", func() bool { return testsvc.NumSub(t, c, q.EnqueueKeys()[3]) == 1 })
		}
		time.Sleep(50 * time.Millisecond) // let the consumers finish their first claim and sleep
		ctx := testutil.Context(t, 60*time.Second)
		for i, q := range qs {
			enqueue(ctx, t, q, task(fmt.Sprintf("w%d", i)))
		}
		testutil.Eventually(t, 60*time.Second, "every queue's task handled", func() bool { return handled.Load() == queues })
	})
}

func TestWakePublishedOnlyForNewEarliest(t *testing.T) {
	testsvc.Backends(t, func(t *testing.T, cluster bool) {
		q, c, clk, ctx := clockedQueue(t, cluster, "wakepub", queue.Options{})
		ps := c.Subscribe(ctx, q.EnqueueKeys()[3])
		defer ps.Close()
		_, err := ps.Receive(ctx) // subscription confirmed
		require.NoError(t, err)
		now := clk.Now()
		steps := []struct {
			due     time.Duration
			publish bool
		}{
			{10 * time.Second, true},  // empty queue
			{20 * time.Second, false}, // behind the earliest
			{5 * time.Second, true},   // new earliest
			{5 * time.Second, false},  // ties do not re-plan
		}
		var want []string
		for i, s := range steps {
			enqueue(ctx, t, q, queue.Task{ID: fmt.Sprint("w", i), Type: "x", Due: now.Add(s.due)})
			if s.publish {
				want = append(want, fmt.Sprint(now.Add(s.due).UnixMilli()))
			}
		}
		// A batch publishes once, its earliest new due time.
		_, err = q.EnqueueBatch(ctx, []queue.Task{
			{ID: "b1", Type: "x", Due: now.Add(2 * time.Second)},
			{ID: "b2", Type: "x", Due: now.Add(time.Second)},
		})
		require.NoError(t, err)
		want = append(want, fmt.Sprint(now.Add(time.Second).UnixMilli()))
		// A marker ends the sequence; published by a script on the queue's
		// slot, as the enqueues were, so on Cluster it arrives in order too.
		marker := redis.NewScript(`return redis.call('PUBLISH', KEYS[1], ARGV[1])`)
		require.NoError(t, marker.Run(ctx, c, q.EnqueueKeys()[3:4], "end").Err())
		var got []string
		for {
			m, err := ps.ReceiveMessage(ctx)
			require.NoError(t, err)
			if m.Payload == "end" {
				break
			}
			got = append(got, m.Payload)
		}
		assert.Equal(t, want, got)
	})
}

// TestConsumerPicksUpCrashedClaims: a worker claims and dies without acking;
// once the lease runs out a running consumer handles the tasks, as attempt 2.
func TestConsumerPicksUpCrashedClaims(t *testing.T) {
	testsvc.Backends(t, func(t *testing.T, cluster bool) {
		q, _ := newQueue(t, cluster, "crashc", queue.Options{})
		ctx := testutil.Context(t, 60*time.Second)
		const n = 50
		for i := range n {
			enqueue(ctx, t, q, task(fmt.Sprint("c", i)))
		}
		crashed := claim(ctx, t, q, n, 300*time.Millisecond, n)

		var mu sync.Mutex
		attempts := map[string]int{}
		h := queue.Each(func(_ context.Context, c *queue.Claimed) error {
			mu.Lock()
			defer mu.Unlock()
			attempts[c.ID] = c.Attempt
			return nil
		})
		stop := runConsumer(t, queue.NewConsumer(q, h, queue.ConsumerOptions{MaxIdle: 100 * time.Millisecond}))
		testutil.Eventually(t, 60*time.Second, "crashed tasks handled", func() bool {
			st, err := q.Stats(ctx)
			require.NoError(t, err)
			return st == queue.Stats{}
		})
		stop()
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, attempts, n)
		for id, a := range attempts {
			assert.Equal(t, 2, a, id)
		}
		for _, c := range crashed {
			assert.ErrorIs(t, q.Ack(ctx, c), queue.ErrStaleToken, "the dead worker's late ack")
		}
	})
}
