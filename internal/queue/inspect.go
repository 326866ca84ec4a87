package queue

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/redis/go-redis/v9"
)

// Reading the queue: where a task is (Inspect, Score), pending tasks (Peek),
// dead letters and what is done with them, and a Snapshot of every task.

// State is where a task is.
type State string

// The states a task can be in.
const (
	StatePending  State = "pending"  // waiting in ready, due or delayed
	StateInFlight State = "inflight" // claimed by a consumer
	StateDead     State = "dead"     // a dead letter
)

// Info describes a stored task.
type Info struct {
	Task
	State State
	// At is the due time (pending), the lease deadline (in flight) or the
	// time the task became a dead letter (dead).
	At time.Time
	// Attempts made so far.
	Attempts   int
	EnqueuedAt time.Time
	// LastError is the cause of the last failed attempt, if any.
	LastError string
}

func infoFrom(state State, score, metaS, payload, lastErr string) (Info, bool) {
	m, ok := parseMeta(metaS)
	if !ok {
		return Info{}, false
	}
	in := Info{
		Task:       Task{Type: m.typ, Payload: []byte(payload), MaxAttempts: m.max},
		State:      state,
		At:         fromMS(scoreMS(score)),
		Attempts:   m.attempts,
		EnqueuedAt: m.enqueued,
		LastError:  lastErr,
	}
	if state == StatePending {
		in.Due = in.At
	}
	return in, true
}

// Inspect returns the task with this id wherever it is; ErrNotFound if none.
func (q *Queue) Inspect(ctx context.Context, id string) (Info, error) {
	v, err := inspectScript.Run(ctx, q.c, q.k.all(), id).Slice()
	if errors.Is(err, redis.Nil) {
		return Info{}, ErrNotFound
	}
	if err != nil {
		return Info{}, fmt.Errorf("queue %s: inspect: %w", q.name, err)
	}
	in, ok := infoFrom(State(v[0].(string)), v[1].(string), v[2].(string), v[3].(string), v[4].(string))
	if !ok {
		return Info{}, ErrNotFound
	}
	in.ID = id
	return in, nil
}

// Score returns the due time of a pending task; ErrNotFound if no pending
// task has this id.
func (q *Queue) Score(ctx context.Context, id string) (time.Time, error) {
	v, err := q.c.ZScore(ctx, q.k.ready, id).Result()
	if errors.Is(err, redis.Nil) {
		return time.Time{}, ErrNotFound
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("queue %s: score: %w", q.name, err)
	}
	return fromMS(int64(math.Round(v))), nil
}

func (q *Queue) list(ctx context.Context, which string, state State, offset, n int) ([]Info, error) {
	n = min(n, MaxList)
	if n <= 0 || offset < 0 {
		return nil, nil
	}
	v, err := listScript.Run(ctx, q.c, q.k.all(), which, offset, n).Slice()
	if err != nil {
		return nil, fmt.Errorf("queue %s: list %s: %w", q.name, which, err)
	}
	out := make([]Info, 0, len(v)/5)
	for i := 0; i+4 < len(v); i += 5 {
		in, ok := infoFrom(state, v[i+1].(string), v[i+2].(string), v[i+3].(string), v[i+4].(string))
		if !ok { // no metadata: still listed, so paging by length stays correct
			in = Info{State: state, At: fromMS(scoreMS(v[i+1].(string)))}
		}
		in.ID = v[i].(string)
		out = append(out, in)
	}
	return out, nil
}

// Peek returns up to n (at most MaxList) pending tasks in due-time order,
// without claiming them.
func (q *Queue) Peek(ctx context.Context, n int) ([]Info, error) {
	return q.list(ctx, "ready", StatePending, 0, n)
}

// ListDead returns up to n (at most MaxList) dead letters from offset, oldest
// first, with payload and last error.
func (q *Queue) ListDead(ctx context.Context, offset, n int) ([]Info, error) {
	return q.list(ctx, "dead", StateDead, offset, n)
}

// RequeueDead moves a dead letter back to the queue, due now, with its
// attempts reset. ErrNotFound if there is no dead letter with this id.
func (q *Queue) RequeueDead(ctx context.Context, id string) error {
	r, err := requeueScript.Run(ctx, q.c, q.k.all(), ms(q.o.Now()), id).Int64()
	if err != nil {
		return fmt.Errorf("queue %s: requeue: %w", q.name, err)
	}
	if r == 0 {
		return ErrNotFound
	}
	return nil
}

// DeleteDead removes a dead letter for good and returns what it was (ID,
// Type, Payload, State dead). ErrNotFound if there is no dead letter with
// this id: of two racing calls, or a delete racing a requeue, only one gets
// the letter.
func (q *Queue) DeleteDead(ctx context.Context, id string) (Info, error) {
	v, err := deleteScript.Run(ctx, q.c, q.k.all(), id).Slice()
	if err != nil {
		return Info{}, fmt.Errorf("queue %s: delete dead: %w", q.name, err)
	}
	if len(v) < 3 || v[0].(int64) != 1 {
		return Info{}, ErrNotFound
	}
	in, ok := infoFrom(StateDead, "0", v[1].(string), v[2].(string), "")
	if !ok {
		in = Info{Task: Task{Payload: []byte(v[2].(string))}, State: StateDead}
	}
	in.ID = id
	return in, nil
}

// Snap is one task of a Snapshot.
type Snap struct {
	ID      string
	Payload []byte
	Dead    bool
}

// Snapshot returns every task of type typ in the queue — pending, in flight
// or dead — read in one script, so a task that moves between states while
// it runs is seen exactly once.
func (q *Queue) Snapshot(ctx context.Context, typ string) ([]Snap, error) {
	v, err := snapshotScript.Run(ctx, q.c, q.k.all(), typ).Slice()
	if err != nil {
		return nil, fmt.Errorf("queue %s: snapshot: %w", q.name, err)
	}
	out := make([]Snap, 0, len(v)/3)
	for i := 0; i+2 < len(v); i += 3 {
		id, _ := v[i].(string)
		payload, _ := v[i+1].(string)
		dead, _ := v[i+2].(int64)
		out = append(out, Snap{ID: id, Payload: []byte(payload), Dead: dead == 1})
	}
	return out, nil
}

// Stats is a snapshot of a queue's depths.
type Stats struct {
	Due      int64 // pending and due now (claimable)
	Delayed  int64 // pending, due later
	InFlight int64 // claimed, lease running (or expired, not yet recovered)
	Dead     int64 // dead letters
	// OldestDue is the due time of the earliest claimable task; zero if none.
	OldestDue time.Time
}

// Stats reads the queue's depths in one script.
func (q *Queue) Stats(ctx context.Context) (Stats, error) {
	s, _, err := q.stats(ctx, "")
	return s, err
}

// StatsApart is Stats with the pending tasks of type typ left out of Due,
// Delayed and OldestDue and counted apart. It reads every pending task: it
// is for an operator's look at a queue, not for a metric.
func (q *Queue) StatsApart(ctx context.Context, typ string) (Stats, int64, error) {
	return q.stats(ctx, typ)
}

func (q *Queue) stats(ctx context.Context, apart string) (Stats, int64, error) {
	v, err := statsScript.Run(ctx, q.c, q.k.all(), ms(q.o.Now()), apart).Slice()
	if err != nil {
		return Stats{}, 0, fmt.Errorf("queue %s: stats: %w", q.name, err)
	}
	s := Stats{Due: v[0].(int64), Delayed: v[1].(int64), InFlight: v[2].(int64), Dead: v[3].(int64)}
	if o := scoreMS(v[4].(string)); o >= 0 {
		s.OldestDue = fromMS(o)
	}
	return s, v[5].(int64), nil
}
