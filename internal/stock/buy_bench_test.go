package stock

import (
	"strconv"
	"testing"
	"time"
)

// BenchmarkStoreBuy runs the buy script for batches of 64 new buyers of one
// SKU on the Redis of SECKILL_TEST_REDIS_ADDR, with the shipped per-shopper
// rate limit (20/s, burst 40); one op is one batch. Every buy the server
// runs carries a request id (the client's, or one it made: "request_id");
// "none" is a batch without, as the script also takes. The "pass" runs
// spend a waiting room pass with each buy, in the order they were
// admitted, while the room holds that many other valid passes: none
// beyond the batch's own ("pass"), 6,000 (a room admitting 100 a second
// with 60 s passes) and half a million (a large room that admitted its
// crowd at once). Admitting the next batch's passes is not timed.
func BenchmarkStoreBuy(b *testing.B) {
	for _, tc := range []struct {
		name      string
		rid, pass bool
		valid     int
	}{{"request_id", true, false, 0}, {"none", false, false, 0}, {"pass", true, true, 0},
		{"pass-6k", true, true, 6_000}, {"pass-500k", true, true, 500_000}} {
		b.Run(tc.name, func(b *testing.B) {
			const sku = 7
			ctx, s := testStore(b, StoreOptions{PerUser: Rate{PerSecond: 20, Burst: 40}}, map[uint64]Config{sku: {Total: 1_000_000_000, Limit: 1, Expires: time.Now().Add(time.Hour)}})
			reqs := make([]Request, 64)
			now := time.Now()
			valid := RoomPrefix(s.o.Prefix, sku) + "valid"
			admitted := 0
			admit := func(upTo int) {
				for admitted < upTo {
					fields := make([]any, 0, 2*min(upTo-admitted, 10_000))
					for ; len(fields) < cap(fields); admitted++ {
						fields = append(fields, "tbench"+strconv.Itoa(admitted+1), now.Add(time.Hour).UnixMilli())
					}
					if err := s.rdb.HSet(ctx, valid, fields...).Err(); err != nil {
						b.Fatal(err)
					}
				}
			}
			if tc.pass {
				admit(tc.valid)
			}
			n := 0
			b.ReportAllocs()
			for b.Loop() {
				if tc.pass {
					b.StopTimer()
					admit(n + len(reqs) + tc.valid)
					b.StartTimer()
				}
				for i := range reqs {
					n++
					id := strconv.Itoa(n)
					reqs[i] = Request{User: "u" + id, Qty: 1, PriceCents: 99900, Created: now}
					if tc.rid {
						reqs[i].RequestID = "srv-5f0c2a9e1b7d43c8a6e2" + id
					}
					if tc.pass {
						reqs[i].Pass = Pass{Ticket: "tbench" + id, Expires: now.Add(time.Hour)}
					}
				}
				_, res, err := s.Buy(ctx, Part{SKU: sku}, reqs, Guard{})
				if err != nil || res[0].Err != nil {
					b.Fatal(err, res[0].Err)
				}
			}
		})
	}
}
