package stock

import (
	"strconv"
	"testing"
	"time"
)

// BenchmarkStoreBuy runs the buy script for batches of 64 new buyers of one
// SKU on the Redis of SECKILL_TEST_REDIS_ADDR, with the shipped per-shopper
// rate limit (20/s, burst 40); one op is one batch.
func BenchmarkStoreBuy(b *testing.B) {
	const sku = 7
	ctx, s := testStore(b, StoreOptions{PerUser: Rate{PerSecond: 20, Burst: 40}}, map[uint64]Config{sku: {Total: 1_000_000_000, Limit: 1, Expires: time.Now().Add(time.Hour)}})
	reqs := make([]Request, 64)
	now := time.Now()
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		for i := range reqs {
			n++
			id := strconv.Itoa(n)
			reqs[i] = Request{User: "u" + id, Qty: 1, PriceCents: 99900, Created: now}
		}
		_, res, err := s.Buy(ctx, Part{SKU: sku}, reqs, Guard{})
		if err != nil || res[0].Err != nil {
			b.Fatal(err, res[0].Err)
		}
	}
}
