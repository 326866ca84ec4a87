package stock

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/replica"
	"github.com/seckill/seckill/internal/storeerr"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/lock"
)

// userIn returns a shopper whose home is bucket b of the sale's SKU.
func (b *bucketSale) userIn(bucket int, name string) string {
	for i := 0; ; i++ {
		u := fmt.Sprintf("%s%d", name, i)
		if Home(b.sku, b.buckets, u).Bucket == bucket {
			return u
		}
	}
}

// A shopper asking for more units than the whole SKU has left is told
// sold out, but the SKU is not flagged sold out while a unit is left: a
// buyer of one unit, whose home is another bucket, still gets it.
func TestARequestForMoreThanIsLeftDoesNotFlagTheSKU(t *testing.T) {
	b := newBucketSale(t, StrategyAtomic, 3, 2, 3) // one unit per bucket
	for _, bucket := range []int{1, 2} {
		_, err := b.buy(0, b.userIn(bucket, "early"), 1)
		require.NoError(t, err)
	}
	// Bucket 0 has its unit; buckets 1 and 2 have none to lend.
	_, err := b.buy(0, b.userIn(0, "pair"), 2)
	require.ErrorIs(t, err, ErrSoldOut)
	assert.False(t, b.sellers[0].SoldOut(b.sku), "a unit is left: the SKU is not sold out")
	_, err = b.buy(0, b.userIn(1, "single"), 1)
	require.NoError(t, err, "the last unit is sold")
	_, err = b.buy(0, b.userIn(2, "late"), 1)
	require.ErrorIs(t, err, ErrSoldOut)
	assert.True(t, b.sellers[0].SoldOut(b.sku))
}

// timeoutAfter is a go-redis hook that lets the nth run of a script reach
// Redis and run there, then reports err instead of its reply: what a
// client sees when the reply does not come back in time.
type timeoutAfter struct {
	sha string
	nth int64
	err error
	n   atomic.Int64
}

func (h *timeoutAfter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *timeoutAfter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if args := cmd.Args(); len(args) > 1 && fmt.Sprint(args[0]) == "evalsha" && args[1] == h.sha && h.n.Add(1) == h.nth {
			cmd.SetErr(h.err)
			return h.err
		}
		return err
	}
}

func (h *timeoutAfter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// After units were moved to a bucket, the buy script runs again for the
// requests it refused. When that run's reply is lost (a read timeout) the
// script may have taken the units and made the orders: the answer is that
// error, whose outcome is unknown (503 unavailable, retry with the request
// id), never ErrBusy, which says nothing happened.
func TestAnUnknownOutcomeAfterABorrowIsNotBusy(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"read timeout", &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}},
		{"replicas", fmt.Errorf("stock: buy sku 78: %w", replica.ErrNotReplicated)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rdb, prefix := testsvc.Cluster(t)
			ctx := t.Context()
			store := NewStore(rdb, StoreOptions{Prefix: prefix})
			b := &bucketSale{ctx: ctx, store: store, sku: 78, buckets: 2}
			_, err := store.Configure(ctx, b.sku, Config{Total: 2, Limit: 1, Buckets: 2, Expires: time.Now().Add(time.Hour)}, true)
			require.NoError(t, err)
			locks := lock.New(rdb, lock.WithPrefix(prefix+"lock:"))
			t.Cleanup(func() { _ = locks.Close() })
			seller := NewSeller(ctx, rdb, store, locks, SellerOptions{Strategy: StrategyAtomic, BatchMax: 1})
			t.Cleanup(seller.Close)
			// Bucket 0 sells its unit; bucket 1 keeps one to lend.
			_, err = seller.Buy(ctx, Layout{SKU: b.sku, Buckets: 2}, Request{User: b.userIn(0, "first"), Qty: 1, Created: time.Now()})
			require.NoError(t, err)

			// The next buy in bucket 0: its first run is refused, a unit moves
			// in, and the reply of the second run is lost.
			rdb.AddHook(&timeoutAfter{sha: buyScript.Hash(), nth: 2, err: tc.err})
			user := b.userIn(0, "second")
			_, err = seller.Buy(ctx, Layout{SKU: b.sku, Buckets: 2}, Request{User: user, Qty: 1, RequestID: "r1", Created: time.Now()})
			require.Error(t, err)
			assert.NotErrorIs(t, err, ErrBusy, "busy says nothing happened: %v", err)
			assert.True(t, storeerr.Unavailable(err), "an unknown outcome: %v", err)
			id, ok, _, err := store.RequestOrder(ctx, Part{SKU: b.sku}, user, "r1")
			require.NoError(t, err)
			assert.True(t, ok, "the script ran: the request id has its order")
			assert.NotEmpty(t, id)
		})
	}
}
