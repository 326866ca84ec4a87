package queue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	mrand "math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Errors returned by the queue. Validation errors come back before anything
// is sent to Redis; Redis and context errors are returned wrapped as they are.
var (
	// ErrEmptyName: New was given an empty queue name.
	ErrEmptyName = errors.New("queue: empty queue name")
	// ErrEmptyID: a task without an id.
	ErrEmptyID = errors.New("queue: empty task id")
	// ErrEmptyType: a task without a type.
	ErrEmptyType = errors.New("queue: empty task type")
	// ErrPayloadTooLarge: the payload exceeds Options.MaxPayload.
	ErrPayloadTooLarge = errors.New("queue: payload too large")
	// ErrDelayTooLong: the due time is further ahead than Options.MaxDelay.
	ErrDelayTooLong = errors.New("queue: due time beyond the maximum delay")
	// ErrBadAttempts: a negative Task.MaxAttempts.
	ErrBadAttempts = errors.New("queue: max attempts must not be negative")
	// ErrStaleToken: ack, nack, release or extend with a token that no longer
	// owns the task (its lease expired and it was recovered, or it was already
	// acked). The task is left untouched.
	ErrStaleToken = errors.New("queue: stale claim token")
	// ErrNotFound: no task (or no dead letter, for the dead-letter calls) with this id.
	ErrNotFound = errors.New("queue: task not found")
	// ErrInFlight: Cancel of a task a consumer holds; ack or nack it instead.
	ErrInFlight = errors.New("queue: task is in flight")
	// ErrRelease, returned (or wrapped) by a handler for a task, hands the task
	// back to the queue without counting the attempt, as on shutdown.
	ErrRelease = errors.New("queue: task released")
)

// Limits that keep every script short however large the queue grows.
const (
	// MaxClaim caps the tasks one Claim moves (larger n is cut to it).
	MaxClaim = 500
	// enqueueChunk is the number of tasks per enqueue script call; a batch is
	// sent as one pipeline of such calls.
	enqueueChunk = 256
	// MaxList caps the tasks one Peek, List or ListDead returns (read-only
	// scripts, about a millisecond for a full page). A shorter page than
	// asked for means the end was reached.
	MaxList = 1000
)

// Defaults for Options fields left zero.
const (
	DefaultMaxAttempts  = 10
	DefaultMaxPayload   = 1 << 20
	DefaultMaxDelay     = 30 * 24 * time.Hour
	DefaultRecoverBatch = 500
)

// Options configure a Queue. The zero value is usable.
type Options struct {
	// Prefix of every key; default DefaultPrefix ("seckill:").
	Prefix string
	// Now is the clock; scripts get the time from it, so delays have
	// millisecond precision and tests can move time. Default time.Now.
	Now func() time.Time
	// MaxAttempts for tasks that do not set their own; default 10.
	MaxAttempts int
	// MaxPayload is the largest payload accepted, in bytes; default 1 MiB.
	MaxPayload int
	// MaxDelay is how far ahead a task may be due; default 30 days.
	MaxDelay time.Duration
	// DeadCap is the most dead letters kept; 0 keeps all of them until an
	// operator acts. When a cap trims letters their ids are logged at Warn
	// level and counted in the dead_trimmed_total metric.
	DeadCap int
	// RecoverBatch is the most expired leases one call returns to ready
	// (every Claim and Recover does one such bounded sweep); default 500.
	RecoverBatch int
	// Backoff gives the delay before retry number attempt (1 after the first
	// failure); default DefaultBackoff.
	Backoff func(attempt int) time.Duration
	// Metrics receives counters; nil turns metrics off.
	Metrics *Metrics
	// Logger for trimmed dead letters and consumer errors; default slog.Default().
	Logger *slog.Logger
}

// Queue is one named reliable queue in Redis. It is safe for concurrent use.
type Queue struct {
	c    redis.UniversalClient
	name string
	k    keys
	o    Options

	coalesce coalescer
}

// New returns the queue called name (for example "orders" or "{sku:42}";
// a name that carries a hash tag keeps it). It fails only with ErrEmptyName.
func New(c redis.UniversalClient, name string, opts Options) (*Queue, error) {
	if name == "" {
		return nil, ErrEmptyName
	}
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = DefaultMaxAttempts
	}
	if opts.MaxPayload <= 0 {
		opts.MaxPayload = DefaultMaxPayload
	}
	if opts.MaxDelay <= 0 {
		opts.MaxDelay = DefaultMaxDelay
	}
	if opts.RecoverBatch <= 0 {
		opts.RecoverBatch = DefaultRecoverBatch
	}
	if opts.Backoff == nil {
		opts.Backoff = DefaultBackoff
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Queue{c: c, name: name, k: newKeys(opts.Prefix, name), o: opts}, nil
}

// Name is the queue's name as given to New.
func (q *Queue) Name() string { return q.name }

// DefaultBackoff doubles from one second (1s, 2s, 4s ... capped at ten
// minutes) and draws the delay uniformly from the upper half of that window,
// so retries of tasks that failed together spread out.
func DefaultBackoff(attempt int) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	d := 10 * time.Minute
	if attempt < 20 {
		d = min(time.Second<<(attempt-1), d)
	}
	return d/2 + time.Duration(mrand.Int64N(int64(d/2)+1))
}

// Task is a unit of work to enqueue.
type Task struct {
	// ID identifies the task within the queue; enqueueing an id that is
	// still pending, in flight or dead is a no-op. Required.
	ID string
	// Type tells the handler what to do. Required.
	Type string
	// Payload is opaque to the queue; at most Options.MaxPayload bytes.
	Payload []byte
	// Due is when the task may run, to the millisecond. Zero or past: now.
	// More than Options.MaxDelay ahead: ErrDelayTooLong.
	Due time.Time
	// MaxAttempts before the task becomes a dead letter; 0: Options.MaxAttempts.
	MaxAttempts int
}

// Claimed is a task a consumer holds until its lease runs out.
type Claimed struct {
	Task
	// Attempt is 1 on the first delivery and counts every claim since,
	// including claims whose lease expired without an ack.
	Attempt int
	// Token proves ownership to Ack, Nack, Release and Extend.
	Token string
	// LeaseUntil is when the task returns to the queue unless acked or extended.
	LeaseUntil time.Time
	// EnqueuedAt is when the task was first enqueued.
	EnqueuedAt time.Time
}

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time { return time.UnixMilli(v) }

// scoreMS parses a sorted-set score (milliseconds) as Redis prints it.
func scoreMS(s string) int64 {
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		return v
	}
	f, _ := strconv.ParseFloat(s, 64)
	return int64(math.Round(f))
}

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
	calls := make([][]any, 0, (len(ts)+enqueueChunk-1)/enqueueChunk)
	for start := 0; start < len(ts); start += enqueueChunk {
		chunk := ts[start:min(start+enqueueChunk, len(ts))]
		argv := make([]any, 0, 1+5*len(chunk))
		argv = append(argv, ms(now))
		for i, t := range chunk {
			a, err := q.enqueueArgs(t, now)
			if err != nil {
				return nil, fmt.Errorf("task %d (%q): %w", start+i, t.ID, err)
			}
			argv = append(argv, a[:5]...)
		}
		calls = append(calls, argv)
	}
	replies, err := q.runMany(ctx, enqueueScript, q.k.enqueue(), calls)
	if err != nil {
		return nil, fmt.Errorf("queue %s: enqueue: %w", q.name, err)
	}
	added := make([]bool, 0, len(ts))
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

// newToken returns a random claim token.
func newToken() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Claim takes up to n due tasks (due time <= now) in due-time order and holds
// them for lease: until Ack, Nack, Release or the lease deadline, no other
// Claim returns them. n is capped at MaxClaim. Each call first returns up to
// Options.RecoverBatch expired leases to the queue (see Recover). An empty
// result with a nil error means nothing is due.
func (q *Queue) Claim(ctx context.Context, n int, lease time.Duration) ([]*Claimed, error) {
	cs, _, err := q.claim(ctx, n, lease)
	return cs, err
}

// claim also returns the next time the queue needs attention (zero: idle).
func (q *Queue) claim(ctx context.Context, n int, lease time.Duration) ([]*Claimed, time.Time, error) {
	n = max(0, min(n, MaxClaim))
	if lease < time.Millisecond {
		lease = time.Millisecond
	}
	now := q.o.Now()
	token := newToken()
	v, err := claimScript.Run(ctx, q.c, q.k.all(), ms(now), n, lease.Milliseconds(), token,
		q.o.RecoverBatch, q.o.DeadCap).Slice()
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("queue %s: claim: %w", q.name, err)
	}
	q.recovered(v[0].(int64), v[1].(int64), v[2].([]any))
	var next time.Time
	if nw := scoreMS(v[3].(string)); nw >= 0 {
		next = fromMS(nw)
	}
	items := v[4].([]any)
	cs := make([]*Claimed, 0, len(items)/4)
	deadline := fromMS(ms(now) + lease.Milliseconds())
	for i := 0; i+3 < len(items); i += 4 {
		c := &Claimed{Token: token, LeaseUntil: deadline}
		c.ID = items[i].(string)
		c.Due = fromMS(scoreMS(items[i+1].(string)))
		m, ok := parseMeta(items[i+2].(string))
		if !ok {
			continue
		}
		c.Type, c.Attempt, c.MaxAttempts, c.EnqueuedAt = m.typ, m.attempts, m.max, m.enqueued
		c.Payload = []byte(items[i+3].(string))
		cs = append(cs, c)
	}
	q.o.Metrics.add(cClaimed, q.name, len(cs))
	return cs, next, nil
}

// recovered reports the outcome of a recovery sweep.
func (q *Queue) recovered(rec, dead int64, trimmed []any) {
	q.o.Metrics.add(cRecovered, q.name, int(rec))
	q.o.Metrics.add(cDead, q.name, int(dead))
	q.trimmed(trimmed)
}

// trimmed logs and counts dead letters removed by Options.DeadCap.
func (q *Queue) trimmed(ids []any) {
	if len(ids) == 0 {
		return
	}
	s := make([]string, len(ids))
	for i, v := range ids {
		s[i] = v.(string)
	}
	q.o.Metrics.add(cTrimmed, q.name, len(s))
	q.o.Logger.Warn("queue: dead-letter cap trimmed the oldest dead letters",
		"queue", q.name, "cap", q.o.DeadCap, "count", len(s), "ids", s)
}

// Recover runs one bounded sweep: up to Options.RecoverBatch tasks whose
// lease expired go back to ready (due now, attempt count kept), or become
// dead letters if they used their last attempt. Consumers call it through
// Claim; it is exported for operators and tests.
func (q *Queue) Recover(ctx context.Context) (recovered, dead int, err error) {
	now := q.o.Now()
	v, err := claimScript.Run(ctx, q.c, q.k.all(), ms(now), 0, 1, "", q.o.RecoverBatch, q.o.DeadCap).Slice()
	if err != nil {
		return 0, 0, fmt.Errorf("queue %s: recover: %w", q.name, err)
	}
	q.recovered(v[0].(int64), v[1].(int64), v[2].([]any))
	return int(v[0].(int64)), int(v[1].(int64)), nil
}

type meta struct {
	attempts, max int
	enqueued      time.Time
	typ           string
}

func parseMeta(s string) (meta, bool) {
	parts := strings.SplitN(s, "|", 5)
	if len(parts) != 5 {
		return meta{}, false
	}
	// attempts|token|max_attempts|enqueued_ms|type
	a, err1 := strconv.Atoi(parts[0])
	m, err2 := strconv.Atoi(parts[2])
	e, err3 := strconv.ParseInt(parts[3], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return meta{}, false
	}
	return meta{attempts: a, max: m, enqueued: fromMS(e), typ: parts[4]}, true
}

// tokenPairs is the token, id ARGV list of ack, release and extend.
func tokenPairs(head []any, cs []*Claimed) []any {
	argv := append(make([]any, 0, len(head)+2*len(cs)), head...)
	for _, c := range cs {
		argv = append(argv, c.Token, c.ID)
	}
	return argv
}

// perTask runs a token-checked script over cs in chunks of MaxClaim and
// returns the ids it reported 0 for.
func (q *Queue) perTask(ctx context.Context, s *redis.Script, head []any, cs []*Claimed) ([]string, error) {
	var stale []string
	for start := 0; start < len(cs); start += MaxClaim {
		chunk := cs[start:min(start+MaxClaim, len(cs))]
		v, err := s.Run(ctx, q.c, q.k.all(), tokenPairs(head, chunk)...).Slice()
		if err != nil {
			return stale, err
		}
		for i, r := range v {
			if r.(int64) == 0 {
				stale = append(stale, chunk[i].ID)
			}
		}
	}
	return stale, nil
}

// Ack deletes a finished task. It fails with ErrStaleToken, leaving the task
// alone, when c's claim no longer owns it.
func (q *Queue) Ack(ctx context.Context, c *Claimed) error {
	stale, err := q.AckBatch(ctx, []*Claimed{c})
	if err != nil {
		return err
	}
	if len(stale) > 0 {
		return ErrStaleToken
	}
	return nil
}

// AckBatch deletes many finished tasks in one script per MaxClaim tasks and
// returns the ids whose claim was stale (those tasks are left untouched).
func (q *Queue) AckBatch(ctx context.Context, cs []*Claimed) (stale []string, err error) {
	if len(cs) == 0 {
		return nil, nil
	}
	stale, err = q.perTask(ctx, ackScript, nil, cs)
	if err != nil {
		return stale, fmt.Errorf("queue %s: ack: %w", q.name, err)
	}
	q.o.Metrics.add(cAcked, q.name, len(cs)-len(stale))
	return stale, nil
}

// Nack reports a failed attempt: the task is retried after Options.Backoff,
// or becomes a dead letter (dead is true) if that was its last attempt.
// cause is kept as the task's last error. ErrStaleToken: c no longer owns it.
func (q *Queue) Nack(ctx context.Context, c *Claimed, cause error) (dead bool, err error) {
	deads, stale, err := q.NackBatch(ctx, []*Claimed{c}, []error{cause})
	switch {
	case err != nil:
		return false, err
	case len(stale) > 0:
		return false, ErrStaleToken
	}
	return len(deads) > 0, nil
}

// RetryAfter is Nack with an explicit delay instead of Options.Backoff (for
// a handler that knows when to try again). A task on its last attempt still
// becomes a dead letter.
func (q *Queue) RetryAfter(ctx context.Context, c *Claimed, delay time.Duration, cause error) (dead bool, err error) {
	deads, stale, err := q.nack(ctx, []*Claimed{c}, []error{cause}, func(int) time.Duration { return delay })
	switch {
	case err != nil:
		return false, err
	case len(stale) > 0:
		return false, ErrStaleToken
	}
	return len(deads) > 0, nil
}

// NackBatch is Nack for many tasks; causes[i] belongs to cs[i] (missing or
// nil causes are recorded as "failed"). It returns the ids that became dead
// letters and the ids whose claim was stale (left untouched).
func (q *Queue) NackBatch(ctx context.Context, cs []*Claimed, causes []error) (dead, stale []string, err error) {
	return q.nack(ctx, cs, causes, q.o.Backoff)
}

func (q *Queue) nack(ctx context.Context, cs []*Claimed, causes []error, backoff func(int) time.Duration) (dead, stale []string, err error) {
	now := q.o.Now()
	for start := 0; start < len(cs); start += MaxClaim {
		chunk := cs[start:min(start+MaxClaim, len(cs))]
		argv := make([]any, 0, 2+4*len(chunk))
		argv = append(argv, ms(now), q.o.DeadCap)
		for i, c := range chunk {
			msg := "failed"
			if j := start + i; j < len(causes) && causes[j] != nil {
				msg = causes[j].Error()
			}
			retry := now.Add(max(0, backoff(c.Attempt)))
			argv = append(argv, c.Token, c.ID, ms(retry), msg)
		}
		v, err := nackScript.Run(ctx, q.c, q.k.all(), argv...).Slice()
		if err != nil {
			return dead, stale, fmt.Errorf("queue %s: nack: %w", q.name, err)
		}
		retried := 0
		for i, r := range v[0].([]any) {
			switch r.(int64) {
			case 0:
				stale = append(stale, chunk[i].ID)
			case 1:
				retried++
			case 2:
				dead = append(dead, chunk[i].ID)
			}
		}
		q.o.Metrics.add(cRetried, q.name, retried)
		q.trimmed(v[1].([]any))
	}
	q.o.Metrics.add(cDead, q.name, len(dead))
	return dead, stale, nil
}

// Release hands claimed tasks back, due now, without counting the attempt
// (for a consumer that stops before handling them). It returns the ids whose
// claim was stale (left untouched).
func (q *Queue) Release(ctx context.Context, cs ...*Claimed) (stale []string, err error) {
	if len(cs) == 0 {
		return nil, nil
	}
	stale, err = q.perTask(ctx, releaseScript, []any{ms(q.o.Now())}, cs)
	if err != nil {
		return stale, fmt.Errorf("queue %s: release: %w", q.name, err)
	}
	return stale, nil
}

// Extend moves the lease deadline of the claimed tasks to now + lease and
// updates their LeaseUntil. It returns the ids whose claim was stale: their
// lease had already expired and another consumer may hold them.
func (q *Queue) Extend(ctx context.Context, lease time.Duration, cs ...*Claimed) (stale []string, err error) {
	return q.extend(ctx, lease, cs, true)
}

// extend leaves LeaseUntil alone unless update is set: the consumer extends
// while its handler may be reading the tasks.
func (q *Queue) extend(ctx context.Context, lease time.Duration, cs []*Claimed, update bool) (stale []string, err error) {
	if len(cs) == 0 {
		return nil, nil
	}
	deadline := fromMS(ms(q.o.Now()) + lease.Milliseconds())
	stale, err = q.perTask(ctx, extendScript, []any{ms(deadline)}, cs)
	if err != nil {
		return stale, fmt.Errorf("queue %s: extend: %w", q.name, err)
	}
	if !update {
		return stale, nil
	}
	lost := make(map[string]bool, len(stale))
	for _, id := range stale {
		lost[id] = true
	}
	for _, c := range cs {
		if !lost[c.ID] {
			c.LeaseUntil = deadline
		}
	}
	return stale, nil
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
	v, err := statsScript.Run(ctx, q.c, q.k.all(), ms(q.o.Now())).Slice()
	if err != nil {
		return Stats{}, fmt.Errorf("queue %s: stats: %w", q.name, err)
	}
	s := Stats{Due: v[0].(int64), Delayed: v[1].(int64), InFlight: v[2].(int64), Dead: v[3].(int64)}
	if o := scoreMS(v[4].(string)); o >= 0 {
		s.OldestDue = fromMS(o)
	}
	return s, nil
}
