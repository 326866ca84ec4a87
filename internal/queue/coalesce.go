package queue

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// coalesceTimeout bounds one coalesced enqueue round. A round runs for
// several callers, so it does not stop when the leading caller's context is
// cancelled; this is what a caller may wait past its own cancellation.
const coalesceTimeout = 5 * time.Second

// coalescer turns concurrent Enqueue calls on one queue into shared scripts
// (group commit): while one round is in flight, new calls queue up, and the
// next round carries up to enqueueChunk of them in one script. A lone call
// pays one round trip as before; many concurrent callers pay one round trip
// per batch instead of one per task. There is no background goroutine: the
// first caller of a round leads it and hands the lead to the next waiter.
type coalescer struct {
	mu      sync.Mutex
	waiting []*pendingEnqueue
	leading bool // a caller holds or has been handed the lead
}

type pendingEnqueue struct {
	argv  []any // id, type, payload, due_ms, max_attempts
	added bool
	err   error
	done  chan struct{}
	lead  chan struct{} // receives the lead; only ever one token in flight
}

// handOff passes the lead to the first waiter, or releases it. mu held.
func (b *coalescer) handOff() {
	if len(b.waiting) == 0 {
		b.leading = false
		return
	}
	b.waiting[0].lead <- struct{}{}
}

func (q *Queue) enqueueCoalesced(ctx context.Context, argv []any) (bool, error) {
	p := &pendingEnqueue{argv: argv, done: make(chan struct{}), lead: make(chan struct{}, 1)}
	b := &q.coalesce
	b.mu.Lock()
	b.waiting = append(b.waiting, p)
	if !b.leading {
		b.leading = true
		p.lead <- struct{}{}
	}
	b.mu.Unlock()
	for {
		select {
		case <-p.done:
			return p.added, p.err
		case <-p.lead:
			q.leadRound(ctx)
		case <-ctx.Done():
			b.mu.Lock()
			if i := slices.Index(b.waiting, p); i >= 0 {
				// Not sent yet: leave, passing on the lead if it was ours.
				b.waiting = slices.Delete(b.waiting, i, i+1)
				select {
				case <-p.lead:
					b.handOff()
				default:
				}
				b.mu.Unlock()
				return false, ctx.Err()
			}
			b.mu.Unlock()
			// Already in a round that is running: its outcome is known soon
			// (coalesceTimeout at most) and says whether the task was added.
			<-p.done
			return p.added, p.err
		}
	}
}

// leadRound sends the first waiters (the leader is the first of them) in one
// script, settles them, and hands the lead on.
func (q *Queue) leadRound(ctx context.Context) {
	b := &q.coalesce
	b.mu.Lock()
	n := min(len(b.waiting), enqueueChunk)
	batch := slices.Clone(b.waiting[:n])
	b.waiting = slices.Delete(b.waiting, 0, n)
	b.mu.Unlock()

	if len(batch) > 0 {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), coalesceTimeout)
		argv := make([]any, 0, 1+5*len(batch))
		argv = append(argv, ms(q.o.Now()))
		for _, p := range batch {
			argv = append(argv, p.argv...)
		}
		v, err := enqueueScript.Run(rctx, q.c, q.k.enqueue(), argv...).Slice()
		cancel()
		if err == nil && len(v) != len(batch) {
			err = fmt.Errorf("enqueue script returned %d results for %d tasks", len(v), len(batch))
		}
		added := 0
		for i, p := range batch {
			if err != nil {
				p.err = fmt.Errorf("queue %s: enqueue: %w", q.name, err)
			} else if p.added = v[i].(int64) == 1; p.added {
				added++
			}
			close(p.done)
		}
		q.o.Metrics.add(cEnqueued, q.name, added)
	}

	b.mu.Lock()
	b.handOff()
	b.mu.Unlock()
}
