package queue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/replica"
)

// Working tasks: Claim under a lease, Ack, Nack and RetryAfter, Release,
// Extend, and Recover of tasks whose lease ran out.

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
	cmd, err := q.o.Replicas.Run(ctx, claimScript, q.k.all(), ms(now), n, lease.Milliseconds(), token,
		q.o.RecoverBatch, q.o.DeadCap)
	unsafe := errors.Is(err, replica.ErrNotReplicated)
	if err != nil && !unsafe {
		return nil, time.Time{}, fmt.Errorf("queue %s: claim: %w", q.name, err)
	}
	v, verr := cmd.Slice()
	if verr != nil {
		return nil, time.Time{}, fmt.Errorf("queue %s: claim: %w", q.name, verr)
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
	if unsafe {
		// Claimed on the primary only: hand them back at once rather than
		// at the lease's end, and let the caller retry.
		if len(cs) > 0 {
			_, _ = q.Release(context.WithoutCancel(ctx), cs...)
		}
		return nil, time.Time{}, fmt.Errorf("queue %s: claim: %w", q.name, err)
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
	return q.ackThen(ctx, cs, nil)
}

// ackThen is AckBatch that also enqueues then (groups of five enqueue
// arguments, as enqueueArgs makes them) in the first script, whatever the
// acks' outcome.
func (q *Queue) ackThen(ctx context.Context, cs []*Claimed, then [][]any) (stale []string, err error) {
	if len(cs) == 0 {
		return nil, nil
	}
	for start := 0; start < len(cs); start += MaxClaim {
		chunk := cs[start:min(start+MaxClaim, len(cs))]
		head := []any{ms(q.o.Now()), len(then)}
		for _, a := range then {
			head = append(head, a...)
		}
		then = nil
		v, err := ackScript.Run(ctx, q.c, q.k.all(), tokenPairs(head, chunk)...).Slice()
		if err != nil {
			return stale, fmt.Errorf("queue %s: ack: %w", q.name, err)
		}
		q.o.Metrics.add(cEnqueued, q.name, int(v[1].(int64)))
		n := 0
		for i, r := range v[0].([]any) {
			if r.(int64) == 0 {
				stale = append(stale, chunk[i].ID)
			} else {
				n++
			}
		}
		q.o.Metrics.add(cAcked, q.name, n)
	}
	return stale, nil
}

// Nack reports a failed attempt: the task is retried after Options.Backoff,
// or becomes a dead letter (dead is true) if that was its last attempt.
// cause is kept as the task's last error. ErrStaleToken: c no longer owns it.
func (q *Queue) Nack(ctx context.Context, c *Claimed, cause error) (dead bool, err error) {
	return q.nackOne(ctx, c, cause, q.o.Backoff)
}

// RetryAfter is Nack with an explicit delay instead of Options.Backoff (for
// a handler that knows when to try again). A task on its last attempt still
// becomes a dead letter.
func (q *Queue) RetryAfter(ctx context.Context, c *Claimed, delay time.Duration, cause error) (dead bool, err error) {
	return q.nackOne(ctx, c, cause, func(int) time.Duration { return delay })
}

// nackOne is nack for a single task, with ErrStaleToken when c no longer
// owns it.
func (q *Queue) nackOne(ctx context.Context, c *Claimed, cause error, delay func(attempt int) time.Duration) (dead bool, err error) {
	deads, stale, err := q.nack(ctx, []*Claimed{c}, []error{cause}, delay)
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
		res, _ := v[0].([]any)
		if len(res) != len(chunk) {
			return dead, stale, fmt.Errorf("queue %s: nack: %d results for %d tasks", q.name, len(res), len(chunk))
		}
		retried := 0
		for i, c := range chunk {
			switch res[i].(int64) { //nolint:gosec // len(res) == len(chunk), checked above
			case 0:
				stale = append(stale, c.ID)
			case 1:
				retried++
			case 2:
				dead = append(dead, c.ID)
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
