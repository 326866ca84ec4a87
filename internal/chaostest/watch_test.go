package chaostest

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/stock"
)

// returnWatch reads, every 50ms, the set of returned orders of every
// bucket of every SKU (the ids whose units came back to Redis) and
// remembers when each id was first seen. The moment bounds when an expiry
// or a cancel gave its units back, which keeps those operations short in
// the linearizability check. An id never seen (Redis lost it, or it came
// and went between two reads) leaves the operation open to the end of its
// segment: the check stays sound, only slower.
type returnWatch struct {
	l    *lane
	mu   sync.Mutex
	seen map[string]time.Time
	done chan struct{}
	wg   sync.WaitGroup
}

func watchReturns(l *lane) *returnWatch {
	w := &returnWatch{l: l, seen: map[string]time.Time{}, done: make(chan struct{})}
	w.wg.Go(w.loop)
	return w
}

func (w *returnWatch) loop() {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-w.done:
			return
		case <-tick.C:
		}
		for _, sku := range w.l.skus {
			w.poll(sku)
		}
	}
}

// poll reads the returned sets of sku's buckets, in one pipeline (one per
// Cluster node).
func (w *returnWatch) poll(sku *skuInfo) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	parts := stock.Parts(sku.id, sku.buckets)
	pipe := w.l.rdb.Pipeline()
	rets := make([]*redis.StringSliceCmd, len(parts))
	for i, p := range parts {
		rets[i] = pipe.SMembers(ctx, w.l.prefix+p.Tag()+":returned")
	}
	_, _ = pipe.Exec(ctx)
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range rets {
		if c.Err() != nil {
			continue
		}
		for _, id := range c.Val() {
			if _, ok := w.seen[id]; !ok {
				w.seen[id] = now
			}
		}
	}
}

// first returns when id was first seen returned.
func (w *returnWatch) first(id string) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t, ok := w.seen[id]
	return t, ok
}

func (w *returnWatch) stop() {
	select {
	case <-w.done:
	default:
		close(w.done)
	}
	w.wg.Wait()
}
