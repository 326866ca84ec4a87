package catalog_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/catalog"
)

// UpsertAll writes its specs all or none: one refused writes none of them,
// and a spec without an id gets one no spec of the call names, so none
// overwrites the SKU another created.
func TestUpsertAllWritesAllOrNone(t *testing.T) {
	ctx := t.Context()
	db := openDB(t)
	st := catalog.NewStore(db, nil)
	start := time.Now().UTC().Truncate(time.Second)
	count := func() (n int64) {
		require.NoError(t, db.Raw("SELECT COUNT(*) FROM skus").Scan(&n).Error)
		return n
	}
	first, _, err := st.Upsert(ctx, spec(0, "Zero", 1, 0, start))
	require.NoError(t, err)
	next := first.ID + 1

	w, err := st.UpsertAll(ctx, []catalog.Spec{spec(0, "First", 1, 0, start), spec(next, "Second", 2, 0, start),
		{ID: next, Stock: ptr(int64(3))}})
	require.NoError(t, err)
	require.Len(t, w, 3)
	assert.True(t, w[0].Created)
	assert.NotEqual(t, next, w[0].SKU.ID, "the spec without an id took an id another names")
	assert.Equal(t, "First", w[0].SKU.Name)
	assert.True(t, w[1].Created)
	assert.Equal(t, int64(2), w[1].SKU.StockTotal, "each spec as it left the SKU")
	assert.False(t, w[2].Created)
	assert.Equal(t, int64(3), w[2].SKU.StockTotal)
	assert.Equal(t, int64(3), count())

	_, err = st.UpsertAll(ctx, []catalog.Spec{spec(0, "New", 1, 0, start), spec(next+10, "New", 1, 0, start),
		{ID: next, Buckets: 4}})
	var ie *catalog.IndexError
	require.True(t, errors.As(err, &ie), "%v", err)
	assert.Equal(t, 2, ie.I)
	assert.ErrorIs(t, err, catalog.ErrBucketsFixed)
	_, err = st.UpsertAll(ctx, []catalog.Spec{spec(next+10, "New", 1, 0, start), {ID: next + 11, Name: ptr("Oops")}})
	require.True(t, errors.As(err, &ie), "%v", err)
	assert.Equal(t, 1, ie.I)
	assert.ErrorIs(t, err, catalog.ErrInvalid)
	assert.Equal(t, int64(3), count(), "a refused call writes nothing")

	_, err = st.Create(ctx, spec(next, "Again", 1, 0, start))
	assert.ErrorIs(t, err, catalog.ErrIDTaken, "Create never changes a SKU")
}

// A create with an id and one without that the database gives the same id
// never both succeed: the one that loses is ErrIDTaken, and nothing of it
// is written.
func TestConcurrentCreatesOfOneIDTakeItOnce(t *testing.T) {
	ctx := t.Context()
	db := openDB(t)
	st := catalog.NewStore(db, nil)
	start := time.Now().UTC().Truncate(time.Second)
	for range 30 {
		var top uint64
		require.NoError(t, db.Raw("SELECT COALESCE(MAX(id), 0) FROM skus").Scan(&top).Error)
		var a, b *catalog.SKU
		var errA, errB error
		var wg sync.WaitGroup
		wg.Go(func() { a, errA = st.Create(ctx, spec(0, "A", 1, 0, start)) })
		wg.Go(func() { b, errB = st.Create(ctx, spec(top+1, "B", 1, 0, start)) })
		wg.Wait()
		for _, err := range []error{errA, errB} {
			if err != nil {
				require.ErrorIs(t, err, catalog.ErrIDTaken)
			}
		}
		if errA == nil && errB == nil {
			assert.NotEqual(t, a.ID, b.ID)
		}
	}
}
