package catalog

import (
	"math"
	"testing"
	"time"
)

// FuzzSpecNumbers gives every numeric field of a SKU and its waiting room
// any value, NaN, the infinities, negative zero and the ends of int64
// among them: what Validate passes is what a SKU may keep, and New and Apply
// keep it so.
func FuzzSpecNumbers(f *testing.F) {
	start := time.Date(2026, 11, 11, 0, 0, 0, 0, time.UTC).UnixNano()
	f.Add(uint64(1), int64(99900), int64(10), 1, 1, start, start+int64(time.Hour), start-int64(time.Hour), "random", 100, int64(60*time.Second), 1.2)
	f.Add(uint64(MaxID)+1, int64(-1), int64(MaxStock)+1, 0, 65, start+100_000, start+400_000, start, "fifo", -1, int64(-time.Second), math.NaN())
	f.Add(uint64(0), int64(math.MinInt64), int64(math.MaxInt64), math.MaxInt32, -1, int64(math.MinInt64), int64(math.MaxInt64), start, "", 0, int64(math.MaxInt64), math.Inf(1))
	f.Add(uint64(7), int64(0), int64(0), 1000, 64, start, start+int64(time.Millisecond), start, "x", MaxAdmitPerSecond+1, int64(MinPassTTL), math.Copysign(0, -1))
	f.Add(uint64(7), int64(MaxPriceCents), int64(MaxStock), 1, 0, start+999_999, start+1_000_000, start+1_000_500, "random", 0, int64(MaxPassTTL), math.Inf(-1))
	f.Fuzz(func(t *testing.T, id uint64, price, stock int64, limit, buckets int, starts, ends, opens int64, mode string, admit int, ttl int64, overbook float64) {
		s := Spec{ID: id, Name: ptr("Phone"), PriceCents: &price, Stock: &stock, PerUserLimit: &limit, Buckets: buckets,
			StartsAt: ptr(time.Unix(0, starts)), EndsAt: ptr(time.Unix(0, ends)),
			WaitingRoom: &RoomSpec{OpensAt: ptr(time.Unix(0, opens)), Mode: mode, AdmitPerSecond: admit, PassTTL: TTL(ttl), Overbook: overbook}}
		if s.Validate() != nil {
			return
		}
		sku, err := s.New(time.Unix(0, start))
		if err != nil {
			t.Fatalf("valid, and not new: %v", err)
		}
		checkKept(t, sku)
		cur := SKU{ID: sku.ID, Name: "Phone", StockTotal: MaxStock, Buckets: 1, PerUserLimit: 1, StartsAt: sku.StartsAt, EndsAt: sku.EndsAt, Room: sku.Room}
		if next, err := (&Spec{StartsAt: s.StartsAt, EndsAt: s.EndsAt, Stock: &stock, PerUserLimit: &limit}).Apply(cur, sku.StartsAt); err == nil {
			checkKept(t, next)
		}
	})
}

// checkKept fails unless every number of sku is one a SKU may keep.
func checkKept(t *testing.T, sku SKU) {
	t.Helper()
	r := sku.Room
	switch {
	case sku.ID > MaxID, sku.PriceCents < 0, sku.PriceCents > MaxPriceCents, sku.StockTotal < 0, sku.StockTotal > MaxStock,
		sku.PerUserLimit < 1, sku.PerUserLimit > MaxPerUserLimit, sku.Buckets < 1, sku.Buckets > MaxBuckets:
		t.Fatalf("kept %+v", sku)
	case !sku.EndsAt.After(sku.StartsAt) || !sku.StartsAt.Equal(sku.StartsAt.Truncate(time.Millisecond)) || !sku.EndsAt.Equal(sku.EndsAt.Truncate(time.Millisecond)):
		t.Fatalf("kept the window %s .. %s", sku.StartsAt.Format(time.RFC3339Nano), sku.EndsAt.Format(time.RFC3339Nano))
	case r.On() && (math.IsNaN(r.Overbook) || r.Overbook < 1 || r.Overbook > MaxOverbook || r.AdmitPerSecond < 0 ||
		r.AdmitPerSecond > MaxAdmitPerSecond || r.PassTTL() < MinPassTTL || r.PassTTL() > MaxPassTTL || r.OpensAt.After(sku.StartsAt)):
		t.Fatalf("kept the room %+v", r)
	}
}
