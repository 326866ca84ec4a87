package catalog

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func ptr[T any](v T) *T { return &v }

// fullSpec gives every field a new SKU needs.
func fullSpec() Spec {
	start := time.Date(2026, 11, 11, 0, 0, 0, 0, time.UTC)
	return Spec{Name: ptr(" Phone "), PriceCents: ptr(int64(100)), Stock: ptr(int64(10)), PerUserLimit: ptr(1),
		StartsAt: ptr(start), EndsAt: ptr(start.Add(time.Hour))}
}

func TestSpecValidate(t *testing.T) {
	s := fullSpec()
	assert.NoError(t, s.Validate())
	assert.Equal(t, "Phone", *s.Name, "trimmed")
	s.ID = MaxID
	assert.NoError(t, s.Validate(), "the largest id")
	assert.NoError(t, (&Spec{}).Validate(), "nothing given: nothing out of range")
	for _, n := range []int{0, 1, MaxBuckets} {
		s := fullSpec()
		s.Buckets = n
		assert.NoError(t, s.Validate(), "buckets %d", n)
		assert.Equal(t, n, s.Buckets, "0 stays 0 (not given): the store decides what it means")
	}

	for name, mutate := range map[string]func(*Spec){
		"no name":        func(s *Spec) { s.Name = ptr("  ") },
		"empty name":     func(s *Spec) { s.Name = ptr("") },
		"long name":      func(s *Spec) { s.Name = ptr(strings.Repeat("x", MaxNameLen+1)) },
		"bad utf8":       func(s *Spec) { s.Name = ptr("\xff") },
		"neg price":      func(s *Spec) { s.PriceCents = ptr(int64(-1)) },
		"huge price":     func(s *Spec) { s.PriceCents = ptr(int64(MaxPriceCents + 1)) },
		"neg stock":      func(s *Spec) { s.Stock = ptr(int64(-1)) },
		"huge stock":     func(s *Spec) { s.Stock = ptr(int64(MaxStock + 1)) },
		"zero limit":     func(s *Spec) { s.PerUserLimit = ptr(0) },
		"huge limit":     func(s *Spec) { s.PerUserLimit = ptr(MaxPerUserLimit + 1) },
		"neg buckets":    func(s *Spec) { s.Buckets = -1 },
		"huge buckets":   func(s *Spec) { s.Buckets = MaxBuckets + 1 },
		"end <= start":   func(s *Spec) { s.EndsAt = s.StartsAt },
		"ancient start":  func(s *Spec) { s.StartsAt = ptr(time.Date(1, 1, 1, 0, 0, 1, 0, time.UTC)) },
		"zero start":     func(s *Spec) { s.StartsAt = ptr(time.Time{}) },
		"far end alone":  func(s *Spec) { s.StartsAt, s.EndsAt = nil, ptr(time.Date(9001, 1, 1, 0, 0, 0, 0, time.UTC)) },
		"old end alone":  func(s *Spec) { s.StartsAt, s.EndsAt = nil, ptr(time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC)) },
		"id above max":   func(s *Spec) { s.ID = MaxID + 1 },
		"max uint64 id":  func(s *Spec) { s.ID = 1<<64 - 1 },
		"only bad name":  func(s *Spec) { *s = Spec{Name: ptr(" ")} },
		"only bad price": func(s *Spec) { *s = Spec{PriceCents: ptr(int64(-5))} },
	} {
		s := fullSpec()
		mutate(&s)
		err := s.Validate()
		assert.True(t, errors.Is(err, ErrInvalid), "%s: %v", name, err)
	}
	s = fullSpec()
	s.Buckets = MaxBuckets + 1
	assert.EqualError(t, s.Validate(), "invalid sku: buckets must be from 1 to 64")
}

// A new SKU needs every Required field: none has a default, and a price
// or a stock not given is not 0.
func TestSpecNewNeedsEveryRequiredField(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := fullSpec()
	sku, err := s.New(now)
	require.NoError(t, err)
	assert.Equal(t, SKU{Name: "Phone", PriceCents: 100, StockTotal: 10, PerUserLimit: 1, Buckets: 1, LimitCountsCancelled: true,
		StartsAt: *s.StartsAt, EndsAt: *s.EndsAt, CreatedAt: now, UpdatedAt: now}, sku)

	free := fullSpec()
	free.PriceCents = ptr(int64(0))
	sku, err = free.New(now)
	require.NoError(t, err, "a price of 0 given")
	assert.Zero(t, sku.PriceCents)

	unset := map[string]func(*Spec){
		"name": func(s *Spec) { s.Name = nil }, "price_cents": func(s *Spec) { s.PriceCents = nil },
		"stock": func(s *Spec) { s.Stock = nil }, "per_user_limit": func(s *Spec) { s.PerUserLimit = nil },
		"starts_at": func(s *Spec) { s.StartsAt = nil }, "ends_at": func(s *Spec) { s.EndsAt = nil },
	}
	assert.Len(t, unset, len(Required))
	for _, field := range Required {
		s := fullSpec()
		unset[field](&s)
		assert.Equal(t, []string{field}, s.Missing())
		_, err := s.New(now)
		assert.True(t, errors.Is(err, ErrInvalid), "%s: %v", field, err)
		assert.ErrorContains(t, err, "a new sku needs "+field+" ")
	}
	s = Spec{ID: 2, Name: ptr("Oops"), Stock: ptr(int64(10))}
	assert.Equal(t, []string{"price_cents", "per_user_limit", "starts_at", "ends_at"}, s.Missing())
	_, err = s.New(now)
	assert.ErrorContains(t, err, "a new sku needs price_cents, per_user_limit, starts_at, ends_at")
}

// A change keeps every field it does not give: a rename leaves the price,
// the stock, the limit and the window as they are.
func TestSpecApplyChangesOnlyWhatItGives(t *testing.T) {
	start := time.Date(2026, 11, 11, 0, 0, 0, 0, time.UTC)
	cur := SKU{ID: 7, Name: "Phone", PriceCents: 99900, StockTotal: 10, Sold: 4, PerUserLimit: 2, Buckets: 4,
		StartsAt: start, EndsAt: start.Add(time.Hour)}

	rename := Spec{Name: ptr(" Phone X ")}
	next, err := rename.Apply(cur, start)
	require.NoError(t, err)
	want := cur
	want.Name = "Phone X"
	assert.Equal(t, want, next, "only the name changes")
	assert.Equal(t, map[string]any{"name": "Phone X"}, rename.columns(), "and only its column is written")

	next, err = (&Spec{ID: 7, PriceCents: ptr(int64(0)), Stock: ptr(int64(4)), Buckets: 4}).Apply(cur, start)
	require.NoError(t, err, "its own id and bucket count, a free price, a stock down to what is sold")
	assert.Equal(t, int64(0), next.PriceCents)
	assert.Equal(t, int64(4), next.StockTotal)
	assert.Equal(t, "Phone", next.Name)

	later := start.Add(3 * time.Hour)
	next, err = (&Spec{EndsAt: &later}).Apply(cur, start)
	require.NoError(t, err)
	assert.Equal(t, later, next.EndsAt)
	assert.Equal(t, start, next.StartsAt)

	for name, tc := range map[string]struct {
		spec Spec
		want error
	}{
		"another id":         {Spec{ID: 8, Name: ptr("x")}, ErrInvalid},
		"empty name":         {Spec{Name: ptr("")}, ErrInvalid},
		"start after end":    {Spec{StartsAt: ptr(start.Add(2 * time.Hour))}, ErrInvalid},
		"end before start":   {Spec{EndsAt: ptr(start.Add(-time.Second))}, ErrInvalid},
		"end at start":       {Spec{EndsAt: ptr(start)}, ErrInvalid},
		"other buckets":      {Spec{Name: ptr("x"), Buckets: 8}, ErrBucketsFixed},
		"stock below sold":   {Spec{Name: ptr("x"), Stock: ptr(int64(3))}, ErrBelowSold},
		"negative stock":     {Spec{Stock: ptr(int64(-1))}, ErrInvalid},
		"limit out of range": {Spec{PerUserLimit: ptr(0)}, ErrInvalid},
	} {
		_, err := tc.spec.Apply(cur, start)
		assert.True(t, errors.Is(err, tc.want), "%s: %v", name, err)
	}
	_, err = (&Spec{EndsAt: ptr(start.Add(-time.Hour))}).Apply(cur, start)
	assert.ErrorContains(t, err, "ends_at must be after starts_at: the sale would run from 2026-11-11T00:00:00Z to 2026-11-10T23:00:00Z")
}

func TestCheckBuckets(t *testing.T) {
	sku := &SKU{ID: 7, Buckets: 4}
	assert.NoError(t, sku.CheckBuckets(0), "not given keeps the count")
	assert.NoError(t, sku.CheckBuckets(4))
	err := sku.CheckBuckets(8)
	assert.True(t, errors.Is(err, ErrBucketsFixed), "%v", err)
	assert.ErrorContains(t, err, "sku 7 has 4, asked for 8")
}

func TestState(t *testing.T) {
	start := time.Date(2026, 11, 11, 0, 0, 0, 0, time.UTC)
	s := &SKU{StartsAt: start, EndsAt: start.Add(time.Hour)}
	assert.Equal(t, Upcoming, s.State(start.Add(-time.Second), 5))
	assert.Equal(t, Live, s.State(start, 5))
	assert.Equal(t, SoldOut, s.State(start, 0))
	assert.Equal(t, Ended, s.State(start.Add(time.Hour), 5))
}

// A Spec's JSON form is the body of POST /admin/skus: a field not given is
// left out, and a price of 0 given is kept.
func TestSpecJSONLeavesOutWhatIsNotGiven(t *testing.T) {
	b, err := json.Marshal(Spec{ID: 5, Name: ptr("Phone"), PriceCents: ptr(int64(0))})
	require.NoError(t, err)
	assert.JSONEq(t, `{"id":5,"name":"Phone","price_cents":0}`, string(b))
	b, err = json.Marshal(fullSpec())
	require.NoError(t, err)
	assert.JSONEq(t, `{"name":" Phone ","price_cents":100,"stock":10,"per_user_limit":1,
		"starts_at":"2026-11-11T00:00:00Z","ends_at":"2026-11-11T01:00:00Z"}`, string(b))
}
