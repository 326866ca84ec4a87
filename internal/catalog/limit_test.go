package catalog_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/catalog"
)

// A new SKU's limit counts cancelled orders unless the spec says false; a
// change without the flag keeps it, one with it changes it, by Spec.Apply
// as by the store's Update and Upsert.
func TestLimitCountsCancelledDefaultsTrueAndIsKept(t *testing.T) {
	start := time.Date(2026, 11, 11, 0, 0, 0, 0, time.UTC)
	s := spec(1, "Phone", 10, 0, start)
	sku, err := s.New(start)
	require.NoError(t, err)
	assert.True(t, sku.LimitCountsCancelled, "not given: the stricter reading")
	s.LimitCountsCancelled = ptr(false)
	sku, err = s.New(start)
	require.NoError(t, err)
	assert.False(t, sku.LimitCountsCancelled)

	next, err := (&catalog.Spec{Name: ptr("Phone X")}).Apply(sku, start)
	require.NoError(t, err)
	assert.False(t, next.LimitCountsCancelled, "a change without the flag keeps it")
	next, err = (&catalog.Spec{LimitCountsCancelled: ptr(true)}).Apply(sku, start)
	require.NoError(t, err)
	assert.True(t, next.LimitCountsCancelled)

	ctx := t.Context()
	db := openDB(t)
	st := catalog.NewStore(db, nil)
	stored := func(id uint64) bool {
		t.Helper()
		var got catalog.SKU
		require.NoError(t, db.Take(&got, "id = ?", id).Error)
		return got.LimitCountsCancelled
	}
	created, isNew, err := st.Upsert(ctx, spec(5, "Phone", 10, 0, start))
	require.NoError(t, err)
	require.True(t, isNew)
	assert.True(t, created.LimitCountsCancelled)
	assert.True(t, stored(5), "the default is written")
	off := spec(6, "Gift", 10, 0, start)
	off.LimitCountsCancelled = ptr(false)
	_, _, err = st.Upsert(ctx, off)
	require.NoError(t, err)
	assert.False(t, stored(6), "false is written, not left to the column's default")

	for _, id := range []uint64{5, 6} {
		was := stored(id)
		_, _, err = st.Upsert(ctx, catalog.Spec{ID: id, Stock: ptr(int64(12))})
		require.NoError(t, err)
		assert.Equal(t, was, stored(id), "sku %d: seeding without the flag keeps it", id)
		sku, err := st.Update(ctx, id, catalog.Spec{Name: ptr("Renamed")})
		require.NoError(t, err)
		assert.Equal(t, was, sku.LimitCountsCancelled, "sku %d: a change without the flag keeps it", id)
		sku, err = st.Update(ctx, id, catalog.Spec{LimitCountsCancelled: ptr(!was)})
		require.NoError(t, err)
		assert.Equal(t, !was, sku.LimitCountsCancelled, "sku %d: a change with the flag changes it", id)
		assert.Equal(t, !was, stored(id))
	}
}
