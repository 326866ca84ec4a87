package faulttest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/stock"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testutil"
	"github.com/seckill/seckill/lock"
)

// TestStalledLockHolderIsFenced runs in-process on the lock and the stock
// store: a buyer that holds the SKU lock, stalls past its TTL and then
// writes is refused (ErrStale) and writes nothing, both when its lock was
// re-acquired by another holder meanwhile and when its token still names
// the lock but a newer fencing number has already been used.
func TestStalledLockHolderIsFenced(t *testing.T) {
	testutil.SkipShort(t, "needs Redis")
	rdb, prefix := testsvc.Redis(t)
	ctx := t.Context()
	locks := lock.New(rdb, lock.WithPrefix(prefix+"lock:"))
	t.Cleanup(func() { _ = locks.Close() })
	store := stock.NewStore(rdb, stock.StoreOptions{Prefix: prefix})
	const sku = 7
	_, err := store.Configure(ctx, sku, stock.Config{Total: 10, Limit: 1, Expires: time.Now().Add(time.Hour)}, true)
	require.NoError(t, err)

	req := func(user string) []stock.Request {
		return []stock.Request{{User: user, Qty: 1, PriceCents: 100, Created: time.Now()}}
	}
	guard := func(m *lock.Lease) stock.Guard {
		return stock.Guard{LockKey: m.Key(), Token: m.Token(), Fence: m.Fence()}
	}
	unchanged := func(left int64, queued int64) {
		t.Helper()
		st, ok, err := store.State(ctx, stock.Part{SKU: sku})
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, left, st.Left, "units left")
		qs, err := store.Queue(stock.Part{SKU: sku}).Stats(ctx)
		require.NoError(t, err)
		assert.Equal(t, queued, qs.Due+qs.Delayed+qs.InFlight, "orders queued")
	}

	// A holds the lock, then stalls past its TTL; B takes the lock over.
	a, err := locks.TryLock(ctx, stock.Tag(sku), 100*time.Millisecond, lock.WithFencing())
	require.NoError(t, err)
	time.Sleep(150 * time.Millisecond)
	b, err := locks.TryLock(ctx, stock.Tag(sku), 2*time.Second, lock.WithFencing())
	require.NoError(t, err, "the stalled holder's lock expired")
	require.Greater(t, b.Fence(), a.Fence())

	// A wakes up and writes under the lock it no longer holds.
	_, _, err = store.Buy(ctx, stock.Part{SKU: sku}, req("a"), guard(a))
	assert.ErrorIs(t, err, stock.ErrStale, "expired holder")
	unchanged(10, 0)

	// B writes: accepted, and its fence is now the highest seen.
	left, res, err := store.Buy(ctx, stock.Part{SKU: sku}, req("b"), guard(b))
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
	assert.Equal(t, int64(9), left)
	require.NoError(t, b.Unlock(ctx))

	// The lock key names A's token again (as a failover to a replica that
	// missed B's acquisition could leave it), but B's newer fence was used.
	require.NoError(t, rdb.Set(ctx, a.Key(), a.Token(), time.Second).Err())
	_, _, err = store.Buy(ctx, stock.Part{SKU: sku}, req("a2"), guard(a))
	assert.ErrorIs(t, err, stock.ErrStale, "older fence than one already used")
	unchanged(9, 1)
	require.NoError(t, rdb.Del(ctx, a.Key()).Err())

	// A holder that stalls through the TTL while the next holder has not
	// written yet is still refused: its token is gone from the lock.
	c, err := locks.TryLock(ctx, stock.Tag(sku), 100*time.Millisecond, lock.WithFencing())
	require.NoError(t, err)
	time.Sleep(150 * time.Millisecond)
	_, _, err = store.Buy(ctx, stock.Part{SKU: sku}, req("c"), guard(c))
	assert.ErrorIs(t, err, stock.ErrStale, "expired, no new holder")
	unchanged(9, 1)

	t.Log("FAULT scenario=stalled-lock-holder accepted=1 stale_writes_refused=3 units_written_by_stale=0")
}
