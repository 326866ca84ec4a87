package catalog_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/testsvc"
)

func openDB(t *testing.T) *gorm.DB { return testsvc.MigratedMySQL(t) }

func ptr[T any](v T) *T { return &v }

// spec gives every field a new SKU needs: id (0 lets the database choose),
// name, stock and buckets as given, a price of 100, a limit of 1, and a
// window of the hour from start.
func spec(id uint64, name string, stock int64, buckets int, start time.Time) catalog.Spec {
	return catalog.Spec{ID: id, Name: &name, PriceCents: ptr(int64(100)), Stock: &stock, PerUserLimit: ptr(1),
		Buckets: buckets, StartsAt: &start, EndsAt: ptr(start.Add(time.Hour))}
}

func TestUpsertIsIdempotentAndGuardsSold(t *testing.T) {
	ctx := t.Context()
	db := openDB(t)
	st := catalog.NewStore(db, nil)
	start := time.Now().UTC().Truncate(time.Second)
	s := spec(7, "Phone", 10, 0, start)

	sku, created, err := st.Upsert(ctx, s)
	require.NoError(t, err)
	assert.True(t, created)
	assert.Equal(t, uint64(7), sku.ID)

	sku, created, err = st.Upsert(ctx, s)
	require.NoError(t, err)
	assert.False(t, created)
	assert.Equal(t, int64(10), sku.StockTotal)

	require.NoError(t, db.Exec("UPDATE skus SET sold = 6 WHERE id = 7").Error)
	s.Stock = ptr(int64(5))
	_, _, err = st.Upsert(ctx, s)
	assert.True(t, errors.Is(err, catalog.ErrBelowSold), "%v", err)
	_, err = st.Update(ctx, 7, catalog.Spec{Stock: ptr(int64(5))})
	assert.True(t, errors.Is(err, catalog.ErrBelowSold), "%v", err)
	sku, err = st.Update(ctx, 7, catalog.Spec{Stock: ptr(int64(6))})
	require.NoError(t, err)
	assert.Equal(t, int64(6), sku.StockTotal)
	_, err = st.Update(ctx, 99, catalog.Spec{Stock: ptr(int64(6))})
	assert.True(t, errors.Is(err, catalog.ErrNotFound), "%v", err)

	auto, created, err := st.Upsert(ctx, spec(0, "Auto", 1, 0, start))
	require.NoError(t, err)
	assert.True(t, created)
	assert.NotZero(t, auto.ID)
}

// A change writes only the fields it gives, whether it comes by Update or
// by an Upsert of an existing id; a new SKU without every required field
// is refused and nothing is written.
func TestAChangeKeepsWhatItDoesNotGive(t *testing.T) {
	ctx := t.Context()
	db := openDB(t)
	st := catalog.NewStore(db, nil)
	start := time.Now().UTC().Truncate(time.Second)
	_, _, err := st.Upsert(ctx, spec(3, "Phone", 10, 2, start))
	require.NoError(t, err)
	var want catalog.SKU
	require.NoError(t, db.Take(&want, "id = 3").Error)

	sku, err := st.Update(ctx, 3, catalog.Spec{Name: ptr("Phone X")})
	require.NoError(t, err)
	want.Name, want.UpdatedAt = "Phone X", sku.UpdatedAt
	assert.Equal(t, want, *sku, "a rename keeps the price, stock, limit, buckets and window")

	sku, isNew, err := st.Upsert(ctx, catalog.Spec{ID: 3, PriceCents: ptr(int64(0)), Stock: ptr(int64(12))})
	require.NoError(t, err)
	assert.False(t, isNew)
	want.PriceCents, want.StockTotal, want.UpdatedAt = 0, 12, sku.UpdatedAt
	assert.Equal(t, want, *sku, "seeding an existing id keeps what it does not give")

	_, err = st.Update(ctx, 3, catalog.Spec{EndsAt: ptr(start.Add(-time.Second))})
	assert.True(t, errors.Is(err, catalog.ErrInvalid), "the window must stay valid: %v", err)

	for _, id := range []uint64{0, 4} {
		_, _, err = st.Upsert(ctx, catalog.Spec{ID: id, Name: ptr("Oops"), Stock: ptr(int64(10))})
		assert.True(t, errors.Is(err, catalog.ErrInvalid), "%v", err)
		assert.ErrorContains(t, err, "price_cents")
	}
	var n int64
	require.NoError(t, db.Raw("SELECT COUNT(*) FROM skus").Scan(&n).Error)
	assert.Equal(t, int64(1), n, "the refused creates wrote nothing")
	var stored catalog.SKU
	require.NoError(t, db.Take(&stored, "id = 3").Error)
	assert.Equal(t, want.Name, stored.Name)
	assert.Equal(t, want.EndsAt, stored.EndsAt.UTC())
}

// A SKU's bucket count is set when it is created (1 when not given) and
// kept by every update: one without a count keeps it, one asking for another
// is refused with ErrBucketsFixed and writes nothing.
func TestBucketsAreFixedAtCreation(t *testing.T) {
	ctx := t.Context()
	db := openDB(t)
	st := catalog.NewStore(db, nil)
	start := time.Now().UTC().Truncate(time.Second)
	stored := func(id uint64) catalog.SKU {
		t.Helper()
		var sku catalog.SKU
		require.NoError(t, db.Take(&sku, "id = ?", id).Error)
		return sku
	}

	sku, created, err := st.Upsert(ctx, spec(1, "Phone", 10, 0, start))
	require.NoError(t, err)
	require.True(t, created)
	assert.Equal(t, 1, sku.Buckets, "not given: one bucket")
	sku, _, err = st.Upsert(ctx, spec(2, "Phone", 10, catalog.MaxBuckets, start))
	require.NoError(t, err)
	assert.Equal(t, catalog.MaxBuckets, sku.Buckets)
	auto, _, err := st.Upsert(ctx, spec(0, "Phone", 10, 0, start))
	require.NoError(t, err)
	assert.Equal(t, 1, stored(auto.ID).Buckets, "an id chosen by the database: one bucket")

	sku, _, err = st.Upsert(ctx, spec(13, "Phone", 10, 4, start))
	require.NoError(t, err)
	assert.Equal(t, 4, sku.Buckets)
	for _, keep := range []int{4, 0} {
		sku, created, err = st.Upsert(ctx, spec(13, "Phone", 12, keep, start))
		require.NoError(t, err, "buckets %d", keep)
		assert.False(t, created)
		assert.Equal(t, 4, sku.Buckets, "buckets %d keeps 4", keep)
		assert.Equal(t, int64(12), sku.StockTotal)
	}

	before := stored(13)
	for _, other := range []int{1, 8} {
		_, _, err = st.Upsert(ctx, spec(13, "Renamed", 20, other, start))
		require.Error(t, err)
		assert.True(t, errors.Is(err, catalog.ErrBucketsFixed), "%v", err)
		assert.ErrorContains(t, err, fmt.Sprintf("sku 13 has 4, asked for %d", other))
		assert.Equal(t, before, stored(13), "the refused update wrote nothing")
		_, err = st.Update(ctx, 13, catalog.Spec{Name: ptr("Renamed"), Buckets: other})
		assert.True(t, errors.Is(err, catalog.ErrBucketsFixed), "%v", err)
		assert.Equal(t, before, stored(13), "the refused update wrote nothing")
	}
}

// newCache returns a store on a fresh database and a cache in front of it
// that keeps what it read for ttl.
func newCache(t *testing.T, ttl time.Duration) (*gorm.DB, *catalog.Store, *catalog.Cache) {
	t.Helper()
	db := openDB(t)
	st := catalog.NewStore(db, nil)
	return db, st, catalog.NewCache(st, ttl)
}

// upsertSKU writes a SKU with the given id and name, one unit of stock,
// on sale for the hour from now.
func upsertSKU(ctx context.Context, t *testing.T, st *catalog.Store, id uint64, name string) {
	t.Helper()
	_, _, err := st.Upsert(ctx, spec(id, name, 1, 0, time.Now().UTC()))
	require.NoError(t, err)
}

func TestCacheRemembersHitsAndMisses(t *testing.T) {
	ctx := t.Context()
	db, st, c := newCache(t, time.Hour)
	upsertSKU(ctx, t, st, 3, "A")

	got, err := c.Get(ctx, 3)
	require.NoError(t, err)
	assert.Equal(t, "A", got.Name)
	_, err = c.Get(ctx, 4)
	assert.True(t, errors.Is(err, catalog.ErrNotFound))

	// Served from memory: the database changes are not seen until Forget.
	require.NoError(t, db.Exec("UPDATE skus SET name = 'B' WHERE id = 3").Error)
	upsertSKU(ctx, t, st, 4, "New")
	got, _ = c.Get(ctx, 3)
	assert.Equal(t, "A", got.Name)
	_, err = c.Get(ctx, 4)
	assert.True(t, errors.Is(err, catalog.ErrNotFound))

	c.Forget(3)
	c.Forget(4)
	got, _ = c.Get(ctx, 3)
	assert.Equal(t, "B", got.Name)
	got, err = c.Get(ctx, 4)
	require.NoError(t, err)
	assert.Equal(t, "New", got.Name)
}

func TestCacheServesAKnownSKUWhileTheStoreIsDown(t *testing.T) {
	ctx := t.Context()
	db, st, c := newCache(t, time.Millisecond)
	upsertSKU(ctx, t, st, 5, "A")
	_, err := c.Get(ctx, 5)
	require.NoError(t, err)

	sqlDB, err := db.DB()
	require.NoError(t, err)
	require.NoError(t, sqlDB.Close())
	time.Sleep(5 * time.Millisecond)
	for range 3 {
		got, err := c.Get(ctx, 5)
		require.NoError(t, err, "a known SKU is served from memory")
		assert.Equal(t, "A", got.Name)
	}
	_, err = c.Get(ctx, 6)
	assert.Error(t, err, "an unknown one needs the store")
}
