package orderid

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIDsNameTheirSKUAndBatch(t *testing.T) {
	now := time.Now()
	seen := map[string]bool{}
	for _, sku := range []uint64{1, 42, 18446744073709551615} {
		for _, bucket := range []int{0, 1, 9, MaxBucket} {
			for range 30 {
				b := NewBatch(sku, bucket, now, 20)
				for i := range 20 {
					id := b.Order(i)
					assert.LessOrEqual(t, len(id), MaxLen, id)
					assert.False(t, seen[id], "unique")
					seen[id] = true
					gotSKU, gotBucket, batch, ok := Parse(id)
					require.True(t, ok, id)
					assert.Equal(t, sku, gotSKU)
					assert.Equal(t, bucket, gotBucket)
					assert.Equal(t, b.ID(), batch)
					made, ok := Made(id)
					require.True(t, ok, id)
					assert.Equal(t, now.UnixMilli(), made.UnixMilli())
				}
			}
		}
	}
	assert.NotContains(t, NewBatch(5, 0, now, 1).Order(0), ".", "bucket 0 keeps the unsplit form")
	a, b := NewBatch(7, 0, now, 1).Order(0), NewBatch(7, 0, now.Add(time.Millisecond), 1).Order(0)
	assert.Less(t, a[:12], b[:12], "ids sort by time")
}

func TestTheLastIndexOfABatchIsDistinct(t *testing.T) {
	b := NewBatch(3, 0, time.Now(), MaxBatch)
	first, last := b.Order(0), b.Order(MaxBatch-1)
	assert.NotEqual(t, first[:len(first)-5], last[:len(last)-5])
}

func TestMalformedOrderIDs(t *testing.T) {
	for _, id := range []string{"", "-", "1-", "x-06h04xk4nr755csppbj17h0w", "0-06h04xk4nr755csppbj17h0w",
		"1-06h04xk4nr755csppbj17h0", "1-06H04XK4NR755CSPPBJ17H0W", "1-06h04xk4nr755csppbj17h0w'", "' OR 1=1",
		"1-" + strings.Repeat("a", 80), "123456789012345678901-06h04xk4nr755csppbj17h0w",
		"01-06h04xk4nr755csppbj17h0w", "1.0-06h04xk4nr755csppbj17h0w", "1.64-06h04xk4nr755csppbj17h0w",
		"1.01-06h04xk4nr755csppbj17h0w", "1.-06h04xk4nr755csppbj17h0w", ".1-06h04xk4nr755csppbj17h0w",
		"1.1.1-06h04xk4nr755csppbj17h0w", "1.+1-06h04xk4nr755csppbj17h0w"} {
		_, _, _, ok := Parse(id)
		assert.False(t, ok, id)
		_, ok = Made(id)
		assert.False(t, ok, id)
	}
	_, ok := Made("1-06h04xk4nr755csppbj17h0u") // u is outside the alphabet
	assert.False(t, ok)
}
