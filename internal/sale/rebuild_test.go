package sale

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/seckill/seckill/internal/stock"
)

// A rebuilt state is divided so each shopper's units and request ids are
// in their home bucket, each closed order in the bucket it came from, and
// every unit left in bucket 0: the buckets' totals add up to the SKU's. The
// units of closed orders the limit counts join their shopper's count in
// the home bucket, and no bucket's total.
func TestSplitRebuiltKeepsShoppersInTheirHomeBucket(t *testing.T) {
	const sku, buckets = 42, 3
	users := []string{"a", "b", "c", "d", "e", "f"}
	r := stock.Rebuilt{Buyers: map[string]int64{}}
	for i, u := range users {
		r.Buyers[u] = int64(i + 1)
		r.Requests = append(r.Requests, stock.Replay{User: u, RequestID: "r-" + u})
	}
	r.Returned = []string{"42.2-06h04xk4nr755csppbj17h0w", "42-06h04xk4nr755csppbj17h0w", "not-an-id"}
	kept := map[string]int64{"a": 2, "g": 1}
	split := splitRebuilt(sku, stock.Config{Total: 100}, r, kept, buckets, 79)

	var total, held int64
	for b, part := range split {
		total += part.Total
		for u, n := range part.Buyers {
			assert.Equal(t, b, stock.Home(sku, buckets, u).Bucket, u)
			held += n
			if b > 0 {
				assert.Zero(t, part.Left)
			}
		}
		for _, q := range part.Requests {
			assert.Equal(t, b, stock.Home(sku, buckets, q.User).Bucket)
		}
	}
	assert.Equal(t, int64(100), total)
	assert.Equal(t, int64(21+3), held, "the shoppers' units and the 3 kept")
	assert.Equal(t, int64(1+2), split[stock.Home(sku, buckets, "a").Bucket].Buyers["a"])
	assert.Equal(t, int64(1), split[stock.Home(sku, buckets, "g").Bucket].Buyers["g"], "a shopper who holds nothing now")
	assert.Equal(t, int64(79), split[0].Left)
	assert.Equal(t, []string{"42.2-06h04xk4nr755csppbj17h0w"}, split[2].Returned)
	assert.ElementsMatch(t, []string{"42-06h04xk4nr755csppbj17h0w", "not-an-id"}, split[0].Returned)
	for b := 1; b < buckets; b++ {
		var n int64
		for u := range split[b].Buyers {
			n += r.Buyers[u]
		}
		assert.Equal(t, n, split[b].Total, "bucket %d holds only what its shoppers took", b)
	}
}
