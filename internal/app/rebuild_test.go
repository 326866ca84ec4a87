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
)

// failRebuildOnce fails the first rebuild script run on the part whose
// stock key is key with a read time-out, as a Redis that stalls does.
type failRebuildOnce struct {
	key   string
	fired *atomic.Int32
}

func (h failRebuildOnce) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h failRebuildOnce) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		a := cmd.Args()
		if len(a) > 5 && fmt.Sprint(a[3]) == h.key && fmt.Sprint(a[5]) == h.key[:len(h.key)-len("stock")]+"buyers:staging" &&
			h.fired.Add(1) == 1 {
			err := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}

func (h failRebuildOnce) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
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
	s.apps[0].Redis.AddHook(failRebuildOnce{key: fmt.Sprintf("%s{sku:%d}:stock", prefix, sku), fired: &fired})

	r := s.do(0, "POST", fmt.Sprintf("/admin/skus/%d/reconcile", sku), "", nil)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	require.EqualValues(t, 2, fired.Load(), "bucket 0's rebuild failed once, then ran again")
	st, ok, err := s.apps[0].Stock.Sum(t.Context(), sku, 3)
	require.NoError(t, err)
	require.True(t, ok)
	assert.EqualValues(t, 30, st.Total, "the buckets' totals add up to the stock")
	assert.True(t, s.audit(sku).Consistent)
}
