package sale

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/seedfile"
)

// A seed is judged row by row against the SKUs as stored and as the rows
// before leave them; the first row refused names its line.
func TestJudgeSeed(t *testing.T) {
	now := time.Date(2026, 11, 11, 12, 0, 0, 0, time.UTC)
	full := func(id uint64, line int) seedfile.Row {
		name := "Phone"
		return seedfile.Row{Line: line, Spec: catalog.Spec{ID: id, Name: &name, PriceCents: new(int64(1)), Stock: new(int64(10)),
			PerUserLimit: new(1), StartsAt: new(now), EndsAt: new(now.Add(time.Hour))}}
	}
	stored := map[uint64]*catalog.SKU{5: {ID: 5, Name: "Old", StockTotal: 10, Sold: 4, PerUserLimit: 1, Buckets: 2,
		StartsAt: now.Add(-time.Hour), EndsAt: now.Add(time.Hour)}}

	next, err := judgeSeed([]seedfile.Row{full(0, 1), full(7, 2), {Line: 3, Spec: catalog.Spec{ID: 7, Stock: new(int64(3))}},
		{Line: 4, Spec: catalog.Spec{ID: 5, Stock: new(int64(4))}}}, stored, now)
	require.NoError(t, err)
	assert.Equal(t, int64(3), next[7].StockTotal, "a new SKU as the file's later row leaves it")
	assert.Equal(t, int64(4), next[5].StockTotal)
	assert.Len(t, next, 2, "a row without an id is judged alone")

	for name, tc := range map[string]struct {
		rows []seedfile.Row
		err  string
	}{
		"new, no price": {[]seedfile.Row{full(7, 1), {Line: 2, Spec: catalog.Spec{ID: 8, Stock: new(int64(1))}}},
			"line 2 (id 8): a new sku needs name, price_cents"},
		"below sold":   {[]seedfile.Row{{Line: 3, Spec: catalog.Spec{ID: 5, Stock: new(int64(3))}}}, "line 3 (id 5): stock below the units already sold"},
		"buckets":      {[]seedfile.Row{full(7, 1), {Line: 2, Spec: catalog.Spec{ID: 7, Buckets: 3}}}, "line 2 (id 7): a sku's stock buckets are fixed"},
		"no window":    {[]seedfile.Row{{Line: 6, Spec: catalog.Spec{ID: 5, EndsAt: new(now.Add(-2 * time.Hour))}}}, "line 6 (id 5): invalid sku: ends_at must be after"},
		"one of many":  {[]seedfile.Row{full(0, 1), {Line: 9, Spec: catalog.Spec{Name: new("x")}}}, `line 9 ("x"): a new sku needs`},
		"later undoes": {[]seedfile.Row{{Line: 1, Spec: catalog.Spec{ID: 5, Stock: new(int64(20))}}, {Line: 2, Spec: catalog.Spec{ID: 5, Stock: new(int64(1))}}}, "line 2 (id 5)"},
	} {
		_, err := judgeSeed(tc.rows, stored, now)
		assert.ErrorContains(t, err, tc.err, name)
	}
}
