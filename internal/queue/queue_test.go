package queue_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/queue"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testutil"
)

func TestNewRejectsEmptyName(t *testing.T) {
	_, err := queue.New(nil, "", queue.Options{})
	assert.ErrorIs(t, err, queue.ErrEmptyName)
}

func TestDelayPrecision(t *testing.T) {
	testsvc.Backends(t, func(t *testing.T, cluster bool) {
		q, _, clk, ctx := clockedQueue(t, cluster, "delay", queue.Options{})
		start := clk.Now()
		added, err := q.Enqueue(ctx, queue.Task{ID: "a", Type: "cancel", Due: start.Add(50 * time.Millisecond)})
		require.NoError(t, err)
		require.True(t, added)

		due, err := q.Score(ctx, "a")
		require.NoError(t, err)
		assert.Equal(t, start.Add(50*time.Millisecond), due)

		clk.Advance(40 * time.Millisecond)
		got, err := q.Claim(ctx, 10, time.Second)
		require.NoError(t, err)
		assert.Empty(t, got, "claimable 10 ms early")

		clk.Advance(20 * time.Millisecond)
		got = claim(ctx, t, q, 10, time.Second, 1)
		assert.Equal(t, "a", got[0].ID)
		assert.Equal(t, "cancel", got[0].Type)
		assert.Equal(t, 1, got[0].Attempt)
		assert.Equal(t, start.Add(50*time.Millisecond), got[0].Due)
		assert.Equal(t, clk.Now().Add(time.Second), got[0].LeaseUntil)
	})
}

func TestEnqueueValidation(t *testing.T) {
	testsvc.Backends(t, func(t *testing.T, cluster bool) {
		q, _, clk, ctx := clockedQueue(t, cluster, "valid", queue.Options{MaxPayload: 8, MaxDelay: time.Hour})
		now := clk.Now()
		tests := []struct {
			name    string
			task    queue.Task
			err     error
			wantDue time.Time
		}{
			{"empty id", queue.Task{Type: "x"}, queue.ErrEmptyID, time.Time{}},
			{"empty type", queue.Task{ID: "x"}, queue.ErrEmptyType, time.Time{}},
			{"oversize payload", queue.Task{ID: "x", Type: "x", Payload: make([]byte, 9)}, queue.ErrPayloadTooLarge, time.Time{}},
			{"too far ahead", queue.Task{ID: "x", Type: "x", Due: now.Add(time.Hour + time.Millisecond)}, queue.ErrDelayTooLong, time.Time{}},
			{"negative attempts", queue.Task{ID: "x", Type: "x", MaxAttempts: -1}, queue.ErrBadAttempts, time.Time{}},
			{"far past runs now", queue.Task{ID: "past", Type: "x", Due: now.Add(-24 * time.Hour)}, nil, now},
			{"zero due runs now", queue.Task{ID: "zero", Type: "x"}, nil, now},
			{"max delay accepted", queue.Task{ID: "edge", Type: "x", Payload: make([]byte, 8), Due: now.Add(time.Hour)}, nil, now.Add(time.Hour)},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				added, err := q.Enqueue(ctx, tt.task)
				if tt.err != nil {
					assert.ErrorIs(t, err, tt.err)
					assert.False(t, added)
					return
				}
				require.NoError(t, err)
				assert.True(t, added)
				due, err := q.Score(ctx, tt.task.ID)
				require.NoError(t, err)
				assert.Equal(t, tt.wantDue, due)
			})
		}
		st, err := q.Stats(ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(2), st.Due)
		assert.Equal(t, int64(1), st.Delayed)

		// One invalid task rejects the whole batch before anything is written.
		_, err = q.EnqueueBatch(ctx, []queue.Task{task("ok1"), {ID: "", Type: "x"}})
		assert.ErrorIs(t, err, queue.ErrEmptyID)
		_, err = q.Score(ctx, "ok1")
		assert.ErrorIs(t, err, queue.ErrNotFound)
	})
}

func TestIdempotentEnqueue(t *testing.T) {
	testsvc.Backends(t, func(t *testing.T, cluster bool) {
		q, _, clk, ctx := clockedQueue(t, cluster, "idem", queue.Options{})
		added, err := q.Enqueue(ctx, queue.Task{ID: "o1", Type: "order", Payload: []byte("first")})
		require.NoError(t, err)
		require.True(t, added)
		added, err = q.Enqueue(ctx, queue.Task{ID: "o1", Type: "order", Payload: []byte("second"), Due: clk.Now().Add(time.Minute)})
		require.NoError(t, err)
		assert.False(t, added, "duplicate reported")

		in, err := q.Inspect(ctx, "o1")
		require.NoError(t, err)
		assert.Equal(t, "first", string(in.Payload), "duplicate left the task untouched")
		assert.Equal(t, clk.Now(), in.Due)

		// Duplicates of in-flight tasks are no-ops too; inside a batch as well.
		got := claim(ctx, t, q, 10, time.Minute, 1)
		res, err := q.EnqueueBatch(ctx, []queue.Task{task("o1"), task("o2"), task("o2")})
		require.NoError(t, err)
		assert.Equal(t, []bool{false, true, false}, res)

		// After the ack the id is free again.
		require.NoError(t, q.Ack(ctx, got[0]))
		added, err = q.Enqueue(ctx, task("o1"))
		require.NoError(t, err)
		assert.True(t, added)
	})
}

func TestBatchEnqueueLarge(t *testing.T) {
	testsvc.Backends(t, func(t *testing.T, cluster bool) {
		q, _, clk, ctx := clockedQueue(t, cluster, "batch", queue.Options{})
		ts := make([]queue.Task, 1000) // several scripts in one pipeline
		for i := range ts {
			ts[i] = queue.Task{ID: fmt.Sprintf("t%04d", i), Type: "x", Due: clk.Now().Add(time.Duration(i) * time.Millisecond)}
		}
		res, err := q.EnqueueBatch(ctx, ts)
		require.NoError(t, err)
		require.Len(t, res, 1000)
		for _, r := range res {
			require.True(t, r)
		}
		clk.Advance(time.Second)
		got, err := q.Claim(ctx, 5000, time.Minute)
		require.NoError(t, err)
		require.Len(t, got, queue.MaxClaim)
		for i, c := range got {
			assert.Equal(t, fmt.Sprintf("t%04d", i), c.ID, "due-time order")
		}
	})
}

func TestStaleAckAfterRecovery(t *testing.T) {
	testsvc.Backends(t, func(t *testing.T, cluster bool) {
		q, _, clk, ctx := clockedQueue(t, cluster, "stale", queue.Options{})
		enqueue(ctx, t, q, task("a"))
		first := claim(ctx, t, q, 1, time.Second, 1)

		// Not expired yet: nobody else gets it.
		clk.Advance(999 * time.Millisecond)
		none, err := q.Claim(ctx, 1, time.Second)
		require.NoError(t, err)
		assert.Empty(t, none)

		clk.Advance(2 * time.Millisecond)
		second := claim(ctx, t, q, 1, time.Second, 1)
		assert.Equal(t, 2, second[0].Attempt, "attempt count kept across recovery")
		assert.NotEqual(t, first[0].Token, second[0].Token)

		assert.ErrorIs(t, q.Ack(ctx, first[0]), queue.ErrStaleToken)
		_, err = q.Nack(ctx, first[0], errors.New("late"))
		assert.ErrorIs(t, err, queue.ErrStaleToken)
		stale, err := q.Extend(ctx, time.Minute, first[0])
		require.NoError(t, err)
		assert.Equal(t, []string{"a"}, stale)
		stale, err = q.Release(ctx, first[0])
		require.NoError(t, err)
		assert.Equal(t, []string{"a"}, stale)

		in, err := q.Inspect(ctx, "a")
		require.NoError(t, err)
		assert.Equal(t, queue.StateInFlight, in.State, "stale calls left the task untouched")
		assert.Equal(t, second[0].LeaseUntil, in.At)

		require.NoError(t, q.Ack(ctx, second[0]))
		assert.ErrorIs(t, q.Ack(ctx, second[0]), queue.ErrStaleToken, "second ack of the same claim")
		_, err = q.Inspect(ctx, "a")
		assert.ErrorIs(t, err, queue.ErrNotFound)
	})
}

func TestExtendLease(t *testing.T) {
	testsvc.Backends(t, func(t *testing.T, cluster bool) {
		q, _, clk, ctx := clockedQueue(t, cluster, "extend", queue.Options{})
		enqueue(ctx, t, q, task("a"))
		got := claim(ctx, t, q, 1, time.Second, 1)
		clk.Advance(800 * time.Millisecond)
		stale, err := q.Extend(ctx, time.Second, got[0])
		require.NoError(t, err)
		assert.Empty(t, stale)
		assert.Equal(t, clk.Now().Add(time.Second), got[0].LeaseUntil)
		clk.Advance(500 * time.Millisecond) // past the first deadline, inside the new one
		rec, dead, err := q.Recover(ctx)
		require.NoError(t, err)
		assert.Zero(t, rec+dead)
		require.NoError(t, q.Ack(ctx, got[0]))
	})
}

func TestCancel(t *testing.T) {
	testsvc.Backends(t, func(t *testing.T, cluster bool) {
		q, _, clk, ctx := clockedQueue(t, cluster, "cancel", queue.Options{})
		_, err := q.EnqueueBatch(ctx, []queue.Task{
			{ID: "later", Type: "cancel-unpaid", Due: clk.Now().Add(15 * time.Minute)},
			task("now"),
		})
		require.NoError(t, err)
		claim(ctx, t, q, 10, 2*time.Hour, 1)

		tests := []struct {
			id  string
			err error
		}{
			{"later", nil},
			{"later", queue.ErrNotFound},
			{"now", queue.ErrInFlight},
			{"unknown", queue.ErrNotFound},
		}
		for _, tt := range tests {
			err := q.Cancel(ctx, tt.id)
			if tt.err == nil {
				assert.NoError(t, err, tt.id)
			} else {
				assert.ErrorIs(t, err, tt.err, tt.id)
			}
		}
		_, err = q.Inspect(ctx, "later")
		assert.ErrorIs(t, err, queue.ErrNotFound, "cancelled task fully removed")
		clk.Advance(time.Hour)
		none, err := q.Claim(ctx, 10, time.Minute)
		require.NoError(t, err)
		assert.Empty(t, none)
	})
}

func TestNackRetryAndDeadLetters(t *testing.T) {
	testsvc.Backends(t, func(t *testing.T, cluster bool) {
		backoff := func(attempt int) time.Duration { return time.Duration(attempt) * 100 * time.Millisecond }
		q, _, clk, ctx := clockedQueue(t, cluster, "dead", queue.Options{Backoff: backoff})
		enqueue(ctx, t, q, queue.Task{ID: "a", Type: "order", Payload: []byte("pay"), MaxAttempts: 2})

		got := claim(ctx, t, q, 1, time.Minute, 1)
		dead, err := q.Nack(ctx, got[0], errors.New("mysql down"))
		require.NoError(t, err)
		assert.False(t, dead)
		due, err := q.Score(ctx, "a")
		require.NoError(t, err)
		assert.Equal(t, clk.Now().Add(100*time.Millisecond), due, "backoff applied")

		clk.Advance(99 * time.Millisecond)
		none, err := q.Claim(ctx, 1, time.Minute)
		require.NoError(t, err)
		assert.Empty(t, none)
		clk.Advance(time.Millisecond)
		got = claim(ctx, t, q, 1, time.Minute, 1)
		assert.Equal(t, 2, got[0].Attempt)
		dead, err = q.Nack(ctx, got[0], errors.New("still down"))
		require.NoError(t, err)
		assert.True(t, dead)

		// Inspect and list.
		in, err := q.Inspect(ctx, "a")
		require.NoError(t, err)
		assert.Equal(t, queue.StateDead, in.State)
		assert.Equal(t, "still down", in.LastError)
		assert.Equal(t, 2, in.Attempts)
		assert.Equal(t, "pay", string(in.Payload))
		list, err := q.ListDead(ctx, 0, 10)
		require.NoError(t, err)
		require.Len(t, list, 1)
		assert.Equal(t, "a", list[0].ID)
		assert.Equal(t, "order", list[0].Type)
		st, err := q.Stats(ctx)
		require.NoError(t, err)
		assert.Equal(t, queue.Stats{Dead: 1}, st)

		// Requeue: attempts start again.
		require.NoError(t, q.RequeueDead(ctx, "a"))
		assert.ErrorIs(t, q.RequeueDead(ctx, "a"), queue.ErrNotFound)
		got = claim(ctx, t, q, 1, time.Minute, 1)
		assert.Equal(t, 1, got[0].Attempt)
		assert.Equal(t, "pay", string(got[0].Payload))

		// Back to dead, then delete for good.
		dead, err = q.RetryAfter(ctx, got[0], 5*time.Second, errors.New("x"))
		require.NoError(t, err)
		require.False(t, dead)
		due, err = q.Score(ctx, "a")
		require.NoError(t, err)
		assert.Equal(t, clk.Now().Add(5*time.Second), due, "explicit delay")
		clk.Advance(5 * time.Second)
		got = claim(ctx, t, q, 1, time.Minute, 1)
		dead, err = q.Nack(ctx, got[0], nil)
		require.NoError(t, err)
		require.True(t, dead)
		gone, err := q.DeleteDead(ctx, "a")
		require.NoError(t, err)
		assert.Equal(t, "pay", string(gone.Payload), "the deleted letter comes back to its deleter")
		assert.Equal(t, queue.StateDead, gone.State)
		_, err = q.DeleteDead(ctx, "a")
		assert.ErrorIs(t, err, queue.ErrNotFound)
		_, err = q.Inspect(ctx, "a")
		assert.ErrorIs(t, err, queue.ErrNotFound)
	})
}

func TestDeadCapReportsTrims(t *testing.T) {
	testsvc.Backends(t, func(t *testing.T, cluster bool) {
		log, buf := testutil.BufferLogger()
		m := queue.NewMetrics("t")
		q, _, clk, ctx := clockedQueue(t, cluster, "cap", queue.Options{DeadCap: 2, MaxAttempts: 1, Logger: log, Metrics: m})
		for i := range 5 {
			enqueue(ctx, t, q, task(fmt.Sprintf("d%d", i)))
			got := claim(ctx, t, q, 1, time.Minute, 1)
			dead, err := q.Nack(ctx, got[0], errors.New("boom"))
			require.NoError(t, err)
			require.True(t, dead)
			clk.Advance(time.Millisecond) // distinct times of death
		}
		list, err := q.ListDead(ctx, 0, 10)
		require.NoError(t, err)
		ids := []string{}
		for _, in := range list {
			ids = append(ids, in.ID)
		}
		assert.Equal(t, []string{"d3", "d4"}, ids, "the newest are kept")
		for _, id := range []string{"d0", "d1", "d2"} {
			assert.Contains(t, buf.String(), id, "trimmed id logged")
			_, err := q.Inspect(ctx, id)
			assert.ErrorIs(t, err, queue.ErrNotFound)
		}
		assert.Equal(t, 3.0, counterValue(t, m, "t_queue_dead_trimmed_total", q.Name()))
		assert.Equal(t, 5.0, counterValue(t, m, "t_queue_dead_lettered_total", q.Name()))
	})
}

func TestCrashRecoveryAndDeadLetter(t *testing.T) {
	testsvc.Backends(t, func(t *testing.T, cluster bool) {
		q, _, clk, ctx := clockedQueue(t, cluster, "crash", queue.Options{MaxAttempts: 3, RecoverBatch: 7})
		const n = 20
		for i := range n {
			enqueue(ctx, t, q, task(fmt.Sprintf("c%02d", i)))
		}
		// A consumer claims everything and dies: no ack, no release.
		crashed := claim(ctx, t, q, n, time.Second, n)

		clk.Advance(time.Second + time.Millisecond)
		// Recovery is bounded: RecoverBatch per call.
		rec, dead, err := q.Recover(ctx)
		require.NoError(t, err)
		assert.Equal(t, 7, rec)
		assert.Zero(t, dead)

		// Another consumer (the real one) handles them all on attempt 2.
		handled := map[string]int{}
		for len(handled) < n {
			got, err := q.Claim(ctx, 5, time.Second)
			require.NoError(t, err)
			require.NotEmpty(t, got)
			for _, c := range got {
				handled[c.ID] = c.Attempt
			}
			stale, err := q.AckBatch(ctx, got)
			require.NoError(t, err)
			require.Empty(t, stale)
		}
		for id, a := range handled {
			assert.Equal(t, 2, a, id)
		}
		for _, c := range crashed {
			assert.ErrorIs(t, q.Ack(ctx, c), queue.ErrStaleToken)
		}

		// A task whose holders keep dying becomes a dead letter after MaxAttempts.
		enqueue(ctx, t, q, task("poison"))
		for attempt := 1; attempt <= 3; attempt++ {
			got, err := q.Claim(ctx, 1, time.Second)
			require.NoError(t, err)
			require.Len(t, got, 1, "attempt %d", attempt)
			assert.Equal(t, attempt, got[0].Attempt)
			clk.Advance(2 * time.Second)
		}
		got, err := q.Claim(ctx, 1, time.Second)
		require.NoError(t, err)
		assert.Empty(t, got)
		in, err := q.Inspect(ctx, "poison")
		require.NoError(t, err)
		assert.Equal(t, queue.StateDead, in.State)
		assert.Contains(t, in.LastError, "lease expired")
	})
}

func TestPeekAndStats(t *testing.T) {
	testsvc.Backends(t, func(t *testing.T, cluster bool) {
		q, _, clk, ctx := clockedQueue(t, cluster, "peek", queue.Options{})
		now := clk.Now()
		_, err := q.EnqueueBatch(ctx, []queue.Task{
			{ID: "c", Type: "x", Due: now.Add(3 * time.Second)},
			{ID: "a", Type: "x", Due: now.Add(-time.Second)},
			{ID: "b", Type: "x", Due: now.Add(time.Second)},
		})
		require.NoError(t, err)
		clk.Advance(500 * time.Millisecond)
		p, err := q.Peek(ctx, 2)
		require.NoError(t, err)
		require.Len(t, p, 2)
		assert.Equal(t, "a", p[0].ID)
		assert.Equal(t, now, p[0].Due)
		assert.Equal(t, "b", p[1].ID)
		st, err := q.Stats(ctx)
		require.NoError(t, err)
		assert.Equal(t, queue.Stats{Due: 1, Delayed: 2, OldestDue: now}, st)
		_, err = q.Claim(ctx, 10, time.Minute)
		require.NoError(t, err)
		st, err = q.Stats(ctx)
		require.NoError(t, err)
		assert.Equal(t, queue.Stats{Delayed: 2, InFlight: 1}, st)
	})
}

func TestComposableEnqueue(t *testing.T) {
	// A stand-in for the buy script: take one unit of stock and enqueue the
	// order in one script, or do neither.
	buy := `
local stock = tonumber(redis.call('GET', KEYS[5]) or '0')
if stock <= 0 then
  return -1
end
if queue_enqueue(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]) == 0 then
  return 0
end
return redis.call('INCRBY', KEYS[5], -1)
`
	testsvc.Backends(t, func(t *testing.T, cluster bool) {
		q, c, _, ctx := clockedQueue(t, cluster, "{sku:42}", queue.Options{})
		// The sale path's stock key shares the queue's hash tag.
		stockKey := strings.TrimSuffix(q.EnqueueKeys()[0], ":q:ready") + ":stock"
		require.Contains(t, stockKey, "{sku:42}:stock")
		require.NoError(t, c.Set(ctx, stockKey, 2, 0).Err())
		script := redis.NewScript(queue.EnqueueLua + buy)

		run := func(id string) int64 {
			args, err := q.EnqueueArgs(queue.Task{ID: id, Type: "order", Payload: []byte(`{"user":7}`)})
			require.NoError(t, err)
			r, err := script.Run(ctx, c, append(q.EnqueueKeys(), stockKey), args...).Int64()
			require.NoError(t, err)
			return r
		}
		assert.Equal(t, int64(1), run("order-1"), "stock 2 -> 1")
		assert.Equal(t, int64(0), run("order-1"), "duplicate: no decrement")
		assert.Equal(t, int64(0), run("order-2"), "stock 1 -> 0")
		assert.Equal(t, int64(-1), run("order-3"), "sold out: nothing enqueued")

		got, err := q.Claim(ctx, 10, time.Minute)
		require.NoError(t, err)
		ids := []string{}
		for _, c := range got {
			ids = append(ids, c.ID)
			assert.JSONEq(t, `{"user":7}`, string(c.Payload))
		}
		assert.ElementsMatch(t, []string{"order-1", "order-2"}, ids)
		v, err := c.Get(ctx, stockKey).Int()
		require.NoError(t, err)
		assert.Zero(t, v)

		// Malformed arguments fail before any write.
		require.NoError(t, c.Set(ctx, stockKey, 5, 0).Err())
		_, err = script.Run(ctx, c, append(q.EnqueueKeys(), stockKey), "", "order", "", 0, 1, 0).Result()
		assert.ErrorContains(t, err, "queue_enqueue: invalid arguments")
		v, err = c.Get(ctx, stockKey).Int()
		require.NoError(t, err)
		assert.Equal(t, 5, v)
	})
}

func TestListByState(t *testing.T) {
	testsvc.Backends(t, func(t *testing.T, cluster bool) {
		q, _, clk, ctx := clockedQueue(t, cluster, "list", queue.Options{MaxAttempts: 1})
		_, err := q.EnqueueBatch(ctx, []queue.Task{task("a"), task("b"), task("c"), {ID: "d", Type: "x", Due: clk.Now().Add(time.Minute)}})
		require.NoError(t, err)
		got, err := q.Claim(ctx, 2, time.Second) // a, b in flight
		require.NoError(t, err)
		require.Len(t, got, 2)
		_, err = q.Nack(ctx, got[1], errors.New("x")) // b dead (one attempt)
		require.NoError(t, err)

		ids := func(state queue.State, offset, n int) []string {
			l, err := q.List(ctx, state, offset, n)
			require.NoError(t, err)
			out := []string{}
			for _, in := range l {
				assert.Equal(t, state, in.State)
				out = append(out, in.ID)
			}
			return out
		}
		assert.Equal(t, []string{"c", "d"}, ids(queue.StatePending, 0, 10))
		assert.Equal(t, []string{"d"}, ids(queue.StatePending, 1, 10), "paged")
		assert.Equal(t, []string{"a"}, ids(queue.StateInFlight, 0, 10))
		assert.Equal(t, []string{"b"}, ids(queue.StateDead, 0, 10))
		assert.Empty(t, ids(queue.State("bogus"), 0, 10))
		l, err := q.List(ctx, queue.StateInFlight, 0, 1)
		require.NoError(t, err)
		assert.Equal(t, got[0].LeaseUntil, l[0].At, "in flight: At is the lease deadline")
	})
}

// TestEnqueueNowakeContract pins the library function the sale path's buy
// script calls for each order of a multi-order script.
func TestEnqueueNowakeContract(t *testing.T) {
	testsvc.Backends(t, func(t *testing.T, cluster bool) {
		q, c, clk, ctx := clockedQueue(t, cluster, "{sku:9}", queue.Options{})
		s := redis.NewScript(queue.EnqueueLua + `
return queue_enqueue_nowake(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6])`)
		now := clk.Now()
		tests := []struct {
			id   string
			due  time.Duration
			want int64
		}{
			{"a", 10 * time.Second, 2}, // empty queue: earliest
			{"b", 20 * time.Second, 1}, // behind a
			{"a", time.Second, 0},      // duplicate
			{"c", 5 * time.Second, 2},  // new earliest
			{"d", -time.Hour, 2},       // past: due now, earliest
		}
		for _, tt := range tests {
			args, err := q.EnqueueArgs(queue.Task{ID: tt.id, Type: "order", Due: now.Add(tt.due)})
			if tt.due < 0 {
				args, err = q.EnqueueArgs(queue.Task{ID: tt.id, Type: "order"})
				args[3] = now.Add(tt.due).UnixMilli() // a raw past due time from another script
			}
			require.NoError(t, err)
			r, err := s.Run(ctx, c, q.EnqueueKeys(), args...).Int64()
			require.NoError(t, err)
			assert.Equal(t, tt.want, r, tt.id)
		}
		due, err := q.Score(ctx, "d")
		require.NoError(t, err)
		assert.Equal(t, now, due, "past due time clamped to now")
	})
}

func TestSnapshotSeesEveryTaskOnceWhileWorkersMoveThem(t *testing.T) {
	testsvc.Backends(t, func(t *testing.T, cluster bool) {
		ctx := t.Context()
		q, _ := newQueue(t, cluster, "snap", queue.Options{})
		const n = 3000
		tasks := make([]queue.Task, n)
		for i := range tasks {
			tasks[i] = queue.Task{ID: fmt.Sprintf("t%04d", i), Type: "order", Payload: []byte(fmt.Sprint(i))}
		}
		_, err := q.EnqueueBatch(ctx, tasks)
		require.NoError(t, err)
		enqueue(ctx, t, q, queue.Task{ID: "other", Type: "other", Payload: []byte("x")})

		// Workers claim and hand back tasks while the snapshots run: a task
		// is always somewhere (pending or in flight), so every snapshot must
		// see each exactly once.
		stop := testutil.Repeat(t, 4, func() bool {
			if cs, err := q.Claim(ctx, 50, time.Minute); err == nil && len(cs) > 0 {
				_, _ = q.Release(ctx, cs...)
			}
			return true
		})
		for range 20 {
			snap, err := q.Snapshot(ctx, "order")
			require.NoError(t, err)
			seen := map[string]bool{}
			for _, s := range snap {
				assert.False(t, seen[s.ID], "seen twice: %s", s.ID)
				seen[s.ID] = true
				assert.False(t, s.Dead)
			}
			assert.Len(t, seen, n)
		}
		stop()

		// A dead letter is in the snapshot, marked dead.
		d, _ := newQueue(t, cluster, "snapdead", queue.Options{})
		_, err = d.Enqueue(ctx, queue.Task{ID: "x", Type: "order", Payload: []byte("x"), MaxAttempts: 1})
		require.NoError(t, err)
		cs := claim(ctx, t, d, 1, time.Minute, 1)
		dead, err := d.Nack(ctx, cs[0], errors.New("bad"))
		require.NoError(t, err)
		require.True(t, dead)
		snap, err := d.Snapshot(ctx, "order")
		require.NoError(t, err)
		require.Len(t, snap, 1)
		assert.True(t, snap[0].Dead)
		assert.Equal(t, "x", string(snap[0].Payload))
	})
}
