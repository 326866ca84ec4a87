package chaostest

import (
	"context"
	"sync"
	"time"

	"github.com/seckill/seckill/internal/stock"
)

// returnWatch reads every SKU's set of returned orders (the ids whose units
// came back to Redis) every 50ms and remembers when each id was first seen.
// The moment bounds when an expiry or a cancel gave its units back, which
// keeps those operations short in the linearizability check. An id never
// seen (Redis lost it, or it came and went between two reads) leaves the
// operation open to the end of its segment: the check stays sound, only
// slower.
type returnWatch struct {
	c    *cluster
	mu   sync.Mutex
	seen map[string]time.Time
	done chan struct{}
	wg   sync.WaitGroup
}

func watchReturns(c *cluster) *returnWatch {
	w := &returnWatch{c: c, seen: map[string]time.Time{}, done: make(chan struct{})}
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
		for _, sku := range w.c.skus {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			ids, err := w.c.rdb.SMembers(ctx, w.c.prefix+stock.Tag(sku.id)+":returned").Result()
			cancel()
			if err != nil {
				continue
			}
			now := time.Now()
			w.mu.Lock()
			for _, id := range ids {
				if _, ok := w.seen[id]; !ok {
					w.seen[id] = now
				}
			}
			w.mu.Unlock()
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
