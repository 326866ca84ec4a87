package order

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestOrderIDNamesItsSKU(t *testing.T) {
	now := time.Now()
	seen := map[string]bool{}
	for _, sku := range []uint64{1, 42, 18446744073709551615} {
		for range 1000 {
			id := newOrderID(sku, now)
			assert.LessOrEqual(t, len(id), 64, id)
			assert.False(t, seen[id], "unique")
			seen[id] = true
			got, ok := skuOfOrderID(id)
			assert.True(t, ok, id)
			assert.Equal(t, sku, got)
		}
	}
	a, b := newOrderID(7, now), newOrderID(7, now.Add(time.Millisecond))
	assert.Less(t, a[:12], b[:12], "ids sort by time")
}

func TestMalformedOrderIDs(t *testing.T) {
	for _, id := range []string{"", "-", "1-", "x-06h04xk4nr755csppbj17h0w", "0-06h04xk4nr755csppbj17h0w",
		"1-06h04xk4nr755csppbj17h0", "1-06H04XK4NR755CSPPBJ17H0W", "1-06h04xk4nr755csppbj17h0w'", "' OR 1=1",
		"1-" + strings.Repeat("a", 80)} {
		_, ok := skuOfOrderID(id)
		assert.False(t, ok, id)
	}
}

func TestValidUserID(t *testing.T) {
	for _, ok := range []string{"u1", "alice@example.com", "user:42", "a-b_c.d"} {
		assert.True(t, ValidUserID(ok), ok)
	}
	for _, bad := range []string{"", "a b", "x' OR '1'='1", "{evil}", "ü", strings.Repeat("a", 65), "a\nb"} {
		assert.False(t, ValidUserID(bad), bad)
	}
}
