package lock

import (
	"testing"
	"time"
)

// BenchmarkTryLockUnlock is the uncontended hot path: one SET NX PX and one
// EVALSHA per iteration. bench/lockbench compares it with other libraries.
func BenchmarkTryLockUnlock(b *testing.B) {
	c, _ := newTestClient(b, false)
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		m, err := c.TryLock(ctx, "bench", 10*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		if err := m.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBuyPathLock is the lock call of the buy path (StrategyLock):
// Lock with a wait bound and a fence, then Unlock, uncontended.
func BenchmarkBuyPathLock(b *testing.B) {
	c, _ := newTestClient(b, false)
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		m, err := c.Lock(ctx, "{sku:7}", 2*time.Second, WithWait(time.Second), WithFencing())
		if err != nil {
			b.Fatal(err)
		}
		if err := m.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
