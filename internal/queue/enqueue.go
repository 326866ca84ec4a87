package queue

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Adding tasks: Enqueue and EnqueueBatch (group-committed scripts), the
// pieces other scripts use to enqueue in their own step, and Cancel.

// EnqueueKeys returns the keys queue_enqueue of EnqueueLua needs, in the
// order of its first four parameters: ready, data, meta, wake. They share the
// queue's hash tag.
func (q *Queue) EnqueueKeys() []string { return q.k.enqueue() }

// EnqueueArgs validates t and returns the remaining arguments of
// queue_enqueue in order: id, type, payload, due_ms, max_attempts, now_ms
// (now from the queue's clock). Errors: ErrEmptyID, ErrEmptyType,
// ErrPayloadTooLarge, ErrDelayTooLong, ErrBadAttempts.
func (q *Queue) EnqueueArgs(t Task) ([]any, error) {
	return q.enqueueArgs(t, q.o.Now())
}

func (q *Queue) enqueueArgs(t Task, now time.Time) ([]any, error) {
	switch {
	case t.ID == "":
		return nil, ErrEmptyID
	case t.Type == "":
		return nil, ErrEmptyType
	case len(t.Payload) > q.o.MaxPayload:
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrPayloadTooLarge, len(t.Payload), q.o.MaxPayload)
	case t.MaxAttempts < 0:
		return nil, ErrBadAttempts
	case t.Due.After(now.Add(q.o.MaxDelay)):
		return nil, fmt.Errorf("%w: due %s, limit %s", ErrDelayTooLong, t.Due.Format(time.RFC3339Nano), q.o.MaxDelay)
	}
	due := ms(t.Due)
	if t.Due.IsZero() || due < ms(now) {
		due = ms(now)
	}
	maxA := t.MaxAttempts
	if maxA == 0 {
		maxA = q.o.MaxAttempts
	}
	return []any{t.ID, t.Type, t.Payload, due, maxA, ms(now)}, nil
}

// Enqueue adds t in one atomic script (payload, metadata and schedule
// together). It reports false, with a nil error, when a task with the same id
// is still pending, in flight or dead; that task is not changed. Validation
// errors: see EnqueueArgs.
//
// Concurrent Enqueue calls on one Queue share scripts (group commit: while
// one script is in flight the next calls gather and go together, up to 256),
// so many goroutines enqueueing one task each cost one round trip per group.
// Each call still returns only once its own task is stored. A call whose ctx
// ends before its task is sent returns ctx's error and adds nothing; once
// sent, it waits for the outcome (at most 5 seconds).
func (q *Queue) Enqueue(ctx context.Context, t Task) (bool, error) {
	now := q.o.Now()
	a, err := q.enqueueArgs(t, now)
	if err != nil {
		return false, err
	}
	return q.enqueueCoalesced(ctx, a[:5])
}

// EnqueueBatch adds many tasks in one round trip (a pipeline of scripts of at
// most 256 tasks each, so no single script runs long). added[i] reports
// whether ts[i] was new. Every task is validated first; one invalid task
// rejects the batch before anything is written. Each script is atomic; if the
// call fails midway, enqueueing the same batch again is safe.
func (q *Queue) EnqueueBatch(ctx context.Context, ts []Task) ([]bool, error) {
	if len(ts) == 0 {
		return nil, nil
	}
	now := q.o.Now()
	args, err := q.batchArgs(ts, now)
	if err != nil {
		return nil, err
	}
	return q.enqueueMany(ctx, now, args)
}

// batchArgs validates ts and returns the five enqueue arguments of each
// (id, type, payload, due_ms, max_attempts), at now.
func (q *Queue) batchArgs(ts []Task, now time.Time) ([][]any, error) {
	args := make([][]any, len(ts))
	for i, t := range ts {
		a, err := q.enqueueArgs(t, now)
		if err != nil {
			return nil, fmt.Errorf("task %d (%q): %w", i, t.ID, err)
		}
		args[i] = a[:5]
	}
	return args, nil
}

// enqueueMany enqueues tasks given as groups of five enqueue arguments (id,
// type, payload, due_ms, max_attempts), enqueueChunk to a script, in one
// pipeline.
func (q *Queue) enqueueMany(ctx context.Context, now time.Time, args [][]any) ([]bool, error) {
	calls := make([][]any, 0, (len(args)+enqueueChunk-1)/enqueueChunk)
	for start := 0; start < len(args); start += enqueueChunk {
		argv := []any{ms(now)}
		for _, a := range args[start:min(start+enqueueChunk, len(args))] {
			argv = append(argv, a...)
		}
		calls = append(calls, argv)
	}
	replies, err := q.runMany(ctx, enqueueScript, q.k.enqueue(), calls)
	if err != nil {
		return nil, fmt.Errorf("queue %s: enqueue: %w", q.name, err)
	}
	added := make([]bool, 0, len(args))
	n := 0
	for _, r := range replies {
		for _, v := range r.([]any) {
			ok := v.(int64) == 1
			if ok {
				n++
			}
			added = append(added, ok)
		}
	}
	q.o.Metrics.add(cEnqueued, q.name, n)
	return added, nil
}

// EnqueueOnAck enqueues ts when the batch being handled is settled, in the
// script that acks it: one round trip fewer for a handler whose work ends
// in new tasks of its own queue (a payment deadline per drained batch).
// ctx must be the context a Consumer of this queue passed to its Handler;
// with any other, ts are enqueued now, as EnqueueBatch does. The tasks are
// enqueued whatever the batch's results (on their own when no task of it is
// acked), so they must be right once the handler's work is done: if the
// enqueue fails, it fails with the acks and the batch is handled again. It
// returns only validation errors (see EnqueueArgs) and, without a
// Consumer's context, EnqueueBatch's.
func (q *Queue) EnqueueOnAck(ctx context.Context, ts []Task) error {
	f, _ := ctx.Value(followKey{}).(*followUps)
	if f == nil || f.q.k != q.k {
		_, err := q.EnqueueBatch(ctx, ts)
		return err
	}
	args, err := q.batchArgs(ts, q.o.Now())
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.args = append(f.args, args...)
	f.mu.Unlock()
	return nil
}

// followKey is the context key of a batch's followUps.
type followKey struct{}

// followUps are the tasks a handler left for the ack of its batch.
type followUps struct {
	q    *Queue
	mu   sync.Mutex
	args [][]any
}

// take returns the follow-ups left so far and forgets them.
func (f *followUps) take() [][]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	a := f.args
	f.args = nil
	return a
}

// runMany runs script once per argv list in one pipeline. Enqueue is
// idempotent, so when the script was not cached yet the whole pipeline is
// simply sent again after loading it.
func (q *Queue) runMany(ctx context.Context, s *redis.Script, keys []string, calls [][]any) ([]any, error) {
	if len(calls) == 1 {
		v, err := s.Run(ctx, q.c, keys, calls[0]...).Result()
		return []any{v}, err
	}
	for try := 0; ; try++ {
		pipe := q.c.Pipeline()
		cmds := make([]*redis.Cmd, len(calls))
		for i, argv := range calls {
			cmds[i] = s.EvalSha(ctx, pipe, keys, argv...)
		}
		_, err := pipe.Exec(ctx)
		if err != nil && try == 0 && redis.HasErrorPrefix(err, "NOSCRIPT") {
			if err := s.Load(ctx, q.c).Err(); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		out := make([]any, len(cmds))
		for i, c := range cmds {
			out[i] = c.Val()
		}
		return out, nil
	}
}

// Cancel removes a pending (due or delayed) task. Errors: ErrInFlight when a
// consumer holds it, ErrNotFound when no pending task has this id (dead
// letters are removed with DeleteDead).
func (q *Queue) Cancel(ctx context.Context, id string) error {
	r, err := cancelScript.Run(ctx, q.c, q.k.all(), id).Int64()
	switch {
	case err != nil:
		return fmt.Errorf("queue %s: cancel: %w", q.name, err)
	case r == -1:
		return ErrInFlight
	case r == 0:
		return ErrNotFound
	}
	return nil
}
