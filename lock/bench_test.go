package lock

import (
	"testing"
	"time"
)

// BenchmarkTryLockUnlock is the uncontended hot path: one SET NX PX and one
// EVALSHA per iteration. bench/lockbench compares it with other libraries.
func BenchmarkTryLockUnlock(b *testing.B) {
	c, _ := newTestClient(b, false, Options{})
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
