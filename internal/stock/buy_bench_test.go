package stock

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/testsvc"
)

// BenchmarkStoreBuy runs the buy script for batches of 64 new buyers of one
// SKU on the Redis of SECKILL_TEST_REDIS_ADDR; one op is one batch.
func BenchmarkStoreBuy(b *testing.B) {
	rdb, prefix := testsvc.Redis(b)
	s := NewStore(rdb, StoreOptions{Prefix: prefix})
	ctx := context.Background()
	const sku = 7
	if _, err := s.Configure(ctx, sku, Config{Total: 1_000_000_000, Limit: 1, Expires: time.Now().Add(time.Hour)}, true); err != nil {
		b.Fatal(err)
	}
	reqs := make([]Request, 64)
	now := time.Now()
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		for i := range reqs {
			n++
			id := strconv.Itoa(n)
			reqs[i] = Request{User: "u" + id, Qty: 1, OrderID: "7-" + id, PriceCents: 99900, Created: now}
		}
		_, res, err := s.Buy(ctx, sku, reqs, Guard{})
		if err != nil || res[0].Err != nil {
			b.Fatal(err, res[0].Err)
		}
	}
}
