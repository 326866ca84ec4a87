package catalog_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	gormmysql "gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	_ "github.com/go-sql-driver/mysql"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/migrations"
)

func openDB(t *testing.T) *gorm.DB {
	t.Helper()
	sqlDB, err := sql.Open("mysql", testsvc.MySQL(t))
	require.NoError(t, err)
	t.Cleanup(func() { sqlDB.Close() })
	_, err = migrations.Up(t.Context(), sqlDB, migrations.MySQL)
	require.NoError(t, err)
	db, err := gorm.Open(gormmysql.New(gormmysql.Config{Conn: sqlDB}), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	return db
}

func TestUpsertIsIdempotentAndGuardsSold(t *testing.T) {
	ctx := t.Context()
	db := openDB(t)
	st := catalog.NewStore(db, nil)
	start := time.Now().UTC().Truncate(time.Second)
	spec := catalog.Spec{ID: 7, Name: "Phone", PriceCents: 100, Stock: 10, PerUserLimit: 1, StartsAt: start, EndsAt: start.Add(time.Hour)}

	sku, created, _, err := st.Upsert(ctx, spec)
	require.NoError(t, err)
	assert.True(t, created)
	assert.Equal(t, uint64(7), sku.ID)

	sku, created, prev, err := st.Upsert(ctx, spec)
	require.NoError(t, err)
	assert.False(t, created)
	assert.Equal(t, int64(10), prev)
	assert.Equal(t, int64(10), sku.StockTotal)

	require.NoError(t, db.Exec("UPDATE skus SET sold = 6 WHERE id = 7").Error)
	spec.Stock = 5
	_, _, _, err = st.Upsert(ctx, spec)
	assert.True(t, errors.Is(err, catalog.ErrBelowSold), "%v", err)
	_, err = st.SetStockTotal(ctx, 7, 5)
	assert.True(t, errors.Is(err, catalog.ErrBelowSold), "%v", err)
	prev, err = st.SetStockTotal(ctx, 7, 6)
	require.NoError(t, err)
	assert.Equal(t, int64(10), prev)
	_, err = st.SetStockTotal(ctx, 99, 6)
	assert.True(t, errors.Is(err, catalog.ErrNotFound), "%v", err)

	auto, created, _, err := st.Upsert(ctx, catalog.Spec{Name: "Auto", PriceCents: 1, Stock: 1, PerUserLimit: 1, StartsAt: start, EndsAt: start.Add(time.Hour)})
	require.NoError(t, err)
	assert.True(t, created)
	assert.NotZero(t, auto.ID)
}

// A SKU's bucket count is set when it is created (1 when not given) and
// kept by every update: one without a count keeps it, one asking for another
// is refused with ErrBucketsFixed and writes nothing.
func TestBucketsAreFixedAtCreation(t *testing.T) {
	ctx := t.Context()
	db := openDB(t)
	st := catalog.NewStore(db, nil)
	start := time.Now().UTC().Truncate(time.Second)
	spec := func(id uint64, buckets int) catalog.Spec {
		return catalog.Spec{ID: id, Name: "Phone", PriceCents: 100, Stock: 10, PerUserLimit: 1, Buckets: buckets, StartsAt: start, EndsAt: start.Add(time.Hour)}
	}
	stored := func(id uint64) catalog.SKU {
		t.Helper()
		var sku catalog.SKU
		require.NoError(t, db.Take(&sku, "id = ?", id).Error)
		return sku
	}

	sku, created, _, err := st.Upsert(ctx, spec(1, 0))
	require.NoError(t, err)
	require.True(t, created)
	assert.Equal(t, 1, sku.Buckets, "not given: one bucket")
	sku, _, _, err = st.Upsert(ctx, spec(2, catalog.MaxBuckets))
	require.NoError(t, err)
	assert.Equal(t, catalog.MaxBuckets, sku.Buckets)
	auto, _, _, err := st.Upsert(ctx, spec(0, 0))
	require.NoError(t, err)
	assert.Equal(t, 1, stored(auto.ID).Buckets, "an id chosen by the database: one bucket")

	sku, _, _, err = st.Upsert(ctx, spec(13, 4))
	require.NoError(t, err)
	assert.Equal(t, 4, sku.Buckets)
	for _, keep := range []int{4, 0} {
		s := spec(13, keep)
		s.Stock = 12
		sku, created, _, err = st.Upsert(ctx, s)
		require.NoError(t, err, "buckets %d", keep)
		assert.False(t, created)
		assert.Equal(t, 4, sku.Buckets, "buckets %d keeps 4", keep)
		assert.Equal(t, int64(12), sku.StockTotal)
	}

	before := stored(13)
	for _, other := range []int{1, 8} {
		s := spec(13, other)
		s.Name, s.Stock = "Renamed", 20
		_, _, _, err = st.Upsert(ctx, s)
		require.Error(t, err)
		assert.True(t, errors.Is(err, catalog.ErrBucketsFixed), "%v", err)
		assert.ErrorContains(t, err, fmt.Sprintf("sku 13 has 4, asked for %d", other))
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
	start := time.Now().UTC()
	_, _, _, err := st.Upsert(ctx, catalog.Spec{ID: id, Name: name, PriceCents: 1, Stock: 1, PerUserLimit: 1, StartsAt: start, EndsAt: start.Add(time.Hour)})
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
