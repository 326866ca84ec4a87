package chaostest

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/stock"
)

// returnWatch remembers when each order id was first seen in the returned
// set of its SKU's bucket (the ids whose units came back to Redis). The
// moment bounds when an expiry or a cancel gave its units back, which keeps
// those operations short in the linearizability check: a deadline task
// expires its orders one after another, and wide windows that all overlap
// leave the check too many orders to try. An id never seen (Redis lost it,
// or it came and went between two reads) leaves the operation open to the
// end of its segment: the check stays sound, only slower.
//
// Every 5ms it reads the sets' sizes (SCARD, cheap whatever the set holds)
// and reads the members only of a set whose size changed; every 50ms it
// reads every set's members, which also catches a set emptied and refilled
// to the same size between two reads.
type returnWatch struct {
	l    *lane
	mu   sync.Mutex
	seen map[string]time.Time
	size map[string]int64 // key → size at the last read
	done chan struct{}
	wg   sync.WaitGroup
}

const (
	watchSizes   = 5 * time.Millisecond
	watchMembers = 10 // full reads every this many size reads
)

func watchReturns(l *lane) *returnWatch {
	w := &returnWatch{l: l, seen: map[string]time.Time{}, size: map[string]int64{}, done: make(chan struct{})}
	for _, sku := range l.skus {
		w.wg.Go(func() { w.loop(sku) })
	}
	return w
}

// loop polls one SKU: a read held up by a slow or frozen node (up to its
// timeout) delays no other SKU's.
func (w *returnWatch) loop(sku *skuInfo) {
	tick := time.NewTicker(watchSizes)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-w.done:
			return
		case <-tick.C:
		}
		w.poll(sku, n%watchMembers == 0)
	}
}

// poll reads the returned sets of sku's buckets, in pipelines (one per
// Cluster node): their sizes, then the members of those whose size changed
// (all of them when full).
func (w *returnWatch) poll(sku *skuInfo, full bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	parts := stock.Parts(sku.id, sku.buckets)
	keys := make([]string, len(parts))
	for i, p := range parts {
		keys[i] = w.l.prefix + p.Tag() + ":returned"
	}
	if !full {
		pipe := w.l.rdb.Pipeline()
		cards := make([]*redis.IntCmd, len(keys))
		for i, k := range keys {
			cards[i] = pipe.SCard(ctx, k)
		}
		_, _ = pipe.Exec(ctx)
		changed := keys[:0:0]
		w.mu.Lock()
		for i, c := range cards {
			if c.Err() == nil && c.Val() != w.size[keys[i]] {
				changed = append(changed, keys[i])
			}
		}
		w.mu.Unlock()
		if keys = changed; len(keys) == 0 {
			return
		}
	}
	pipe := w.l.rdb.Pipeline()
	rets := make([]*redis.StringSliceCmd, len(keys))
	for i, k := range keys {
		rets[i] = pipe.SMembers(ctx, k)
	}
	_, _ = pipe.Exec(ctx)
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, c := range rets {
		if c.Err() != nil {
			continue
		}
		w.size[keys[i]] = int64(len(c.Val()))
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
