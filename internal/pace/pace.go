// Package pace measures how fast the backend persists orders, across every
// instance: each process counts the orders its drain wrote to SQL and adds
// them to a counter per second in Redis once a second; Best reads the best
// second of the last minute. A waiting room created without an admission
// rate admits at a rate drawn from it (internal/room), so that it lets
// shoppers in about as fast as their orders can be written.
//
// The counters are approximate by design: a process that dies loses the
// second it had not added yet, and a count lands in the second it was
// added, not the one its orders were written in.
package pace

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Window is how far back Best looks.
const Window = time.Minute

// Pace counts persisted orders in Redis under prefix.
type Pace struct {
	rdb     redis.UniversalClient
	prefix  string
	now     func() time.Time
	pending atomic.Int64

	mu   sync.Mutex
	best float64
	read time.Time // when best was read from Redis
}

// New returns a Pace keeping its counters in rdb under prefix; now is the
// clock (nil: time.Now).
func New(rdb redis.UniversalClient, prefix string, now func() time.Time) *Pace {
	if now == nil {
		now = time.Now
	}
	return &Pace{rdb: rdb, prefix: prefix, now: now}
}

// key is the counter of the second sec. Every counter carries one hash tag,
// so Best reads them in one MGET on a Redis Cluster too.
func (p *Pace) key(sec int64) string {
	return p.prefix + "{pace}:" + strconv.FormatInt(sec, 10)
}

// Add counts n orders persisted by this process (in memory: Run adds them
// to Redis).
func (p *Pace) Add(n int) {
	if p != nil && n > 0 {
		p.pending.Add(int64(n))
	}
}

// Run adds the orders counted to Redis once a second until ctx is done,
// then once more.
func (p *Pace) Run(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			p.Flush(fctx)
			cancel()
			return
		case <-t.C:
			p.Flush(ctx)
		}
	}
}

// Flush adds the orders counted since the last flush to the current
// second's counter. A failed write keeps them for the next.
func (p *Pace) Flush(ctx context.Context) {
	n := p.pending.Swap(0)
	if n == 0 {
		return
	}
	k := p.key(p.now().Unix())
	_, err := p.rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.IncrBy(ctx, k, n)
		pipe.Expire(ctx, k, 2*Window)
		return nil
	})
	if err != nil {
		p.pending.Add(n)
	}
}

// Best returns the most orders persisted in one second of the last minute,
// by every instance together. It reads Redis at most once a second and
// answers from what it read last in between, or after a failed read.
func (p *Pace) Best(ctx context.Context) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if now.Sub(p.read) < time.Second && !p.read.IsZero() {
		return p.best
	}
	p.read = now
	end := now.Unix()
	keys := make([]string, 0, int(Window/time.Second))
	for s := end - int64(Window/time.Second) + 1; s <= end; s++ {
		keys = append(keys, p.key(s))
	}
	vals, err := p.rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return p.best
	}
	best := int64(0)
	for _, v := range vals {
		if s, ok := v.(string); ok {
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				best = max(best, n)
			}
		}
	}
	p.best = float64(best)
	return p.best
}
