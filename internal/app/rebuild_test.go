package app

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/stock"
)

// failRebuild fails the first times rebuild script runs on the part whose
// stock key is key with a read time-out, as a Redis that stalls does.
type failRebuild struct {
	key   string
	times int32
	fired *atomic.Int32
}

func (h failRebuild) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h failRebuild) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		a := cmd.Args()
		if len(a) > 5 && fmt.Sprint(a[3]) == h.key && fmt.Sprint(a[5]) == h.key[:len(h.key)-len("stock")]+"buyers:staging" &&
			h.fired.Add(1) <= h.times {
			err := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}

func (h failRebuild) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A rebuild of a SKU split into buckets writes bucket 0, which holds the
// units left, last. One that a stalled Redis stops just before it is made
// again whole, so the buckets' totals add up to the SKU's stock again;
// left part-way, a later stock change would compute its delta from totals
// that do not.
func TestARebuildStoppedPartWayIsMadeAgainWhole(t *testing.T) {
	s := startSale(t, saleOpts{})
	sku := s.seedBuckets(30, 1, 3)
	for i := range 12 {
		require.Equal(t, http.StatusAccepted, s.buy(0, sku, fmt.Sprintf("u%02d", i), 1).Status)
	}
	var fired atomic.Int32
	prefix := s.env["SECKILL_REDIS_KEY_PREFIX"]
	s.apps[0].Redis.AddHook(failRebuild{key: fmt.Sprintf("%s{sku:%d}:stock", prefix, sku), times: 1, fired: &fired})

	r := s.do(0, "POST", fmt.Sprintf("/admin/skus/%d/reconcile", sku), "", nil)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	require.EqualValues(t, 2, fired.Load(), "bucket 0's rebuild failed once, then ran again")
	st, ok, err := s.apps[0].Stock.Sum(t.Context(), stock.Layout{SKU: sku, Buckets: 3})
	require.NoError(t, err)
	require.True(t, ok)
	assert.EqualValues(t, 30, st.Total, "the buckets' totals add up to the stock")
	assert.True(t, s.audit(sku).Consistent)
}

// A rebuild that a Redis stalled for longer than its retries leaves the
// buckets it wrote holding what their shoppers took, and bucket 0, which
// lent some of its units to them, as it was: the buckets' totals count the
// lent units twice. A stock change or an end made then is made against
// SQL's stock, not those totals: a raise is not refused as a cut below the
// units taken after SQL took it, an end is not refused at all, and the
// buckets add up to the stock again.
func TestAChangeAfterARebuildLeftPartWayMatchesSQL(t *testing.T) {
	s := startSale(t, saleOpts{})
	t.Run("raise", func(t *testing.T) {
		sku := sellThroughAndStopARebuild(t, s)
		r := s.do(0, "PUT", fmt.Sprintf("/admin/skus/%d/stock", sku), "", map[string]any{"stock_total": 31})
		require.Equal(t, http.StatusOK, r.Status, r.Raw)
		requireTotals(t, s, sku, 31)
		rep := s.audit(sku)
		assert.True(t, rep.Consistent, "%+v", rep)
		assert.EqualValues(t, 1, *rep.RedisLeft, "the unit added is on sale")
		assert.Equal(t, http.StatusAccepted, s.buy(0, sku, "late", 1).Status)
	})
	t.Run("end", func(t *testing.T) {
		sku := sellThroughAndStopARebuild(t, s)
		r := s.do(0, "POST", fmt.Sprintf("/admin/skus/%d/end", sku), "", nil)
		require.Equal(t, http.StatusOK, r.Status, r.Raw)
		requireTotals(t, s, sku, 30)
		assert.True(t, s.audit(sku).Consistent)
	})
}

// sellThroughAndStopARebuild seeds a SKU of 30 units in 3 buckets and sells
// them so bucket 0 lends units, then stops a rebuild of it before bucket 0
// as a Redis stalled past the rebuild's retries does.
func sellThroughAndStopARebuild(t *testing.T, s *deployment) uint64 {
	t.Helper()
	const buckets = 3
	sku := s.seedBuckets(30, 1, buckets)
	// Bucket 2's shoppers take its 10 units, bucket 1's 12 (2 borrowed
	// from bucket 0, as bucket 2 has none), and bucket 0's the rest.
	n := 0
	for _, b := range []struct{ bucket, buys int }{{2, 10}, {1, 12}, {0, 30}} {
		for i := range b.buys {
			r := s.buy(0, sku, userIn(sku, buckets, b.bucket, fmt.Sprintf("b%d-%d-", b.bucket, i)), 1)
			if r.Status != http.StatusAccepted {
				require.Equal(t, "sold_out", r.Str("error"), r.Raw)
				break
			}
			n++
		}
	}
	require.Equal(t, 30, n, "every unit sold")
	b0, _, err := s.apps[0].Stock.State(t.Context(), stock.Part{SKU: sku})
	require.NoError(t, err)
	require.Negative(t, b0.Moved, "bucket 0 lent units: %+v", b0)

	var fired atomic.Int32
	prefix := s.env["SECKILL_REDIS_KEY_PREFIX"]
	s.apps[0].Redis.AddHook(failRebuild{key: fmt.Sprintf("%s{sku:%d}:stock", prefix, sku), times: 5, fired: &fired})
	r := s.do(0, "POST", fmt.Sprintf("/admin/skus/%d/reconcile", sku), "", nil)
	require.Equal(t, http.StatusServiceUnavailable, r.Status, r.Raw)
	st, ok, err := s.apps[0].Stock.Sum(t.Context(), stock.Layout{SKU: sku, Buckets: buckets})
	require.NoError(t, err)
	require.True(t, ok)
	require.Greater(t, st.Total, int64(30), "bucket 0 was not rebuilt, the others were")
	return sku
}

// requireTotals fails unless the buckets' totals of sku add up to total.
func requireTotals(t *testing.T, s *deployment, sku uint64, total int64) {
	t.Helper()
	st, ok, err := s.apps[0].Stock.Sum(t.Context(), stock.Layout{SKU: sku, Buckets: 3})
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, total, st.Total, "the buckets' totals add up to the stock")
}
