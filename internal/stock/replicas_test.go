package stock

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/replica"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/lock"
)

// With the store waiting for a replica, every write a buy's acceptance
// depends on is on a replica first, the moves between buckets included:
// in a Cluster a SKU's buckets sit on different shards, and a lend that the
// lender's replica does not have would be undone by a failover of that
// shard while the units were sold in another. Here the lender's replica is
// frozen: no unit moves and nothing is accepted; once it is back the move
// lands and the unit sells.
func TestAMoveBetweenShardsWaitsForTheLendersReplica(t *testing.T) {
	cl := testsvc.StartRedisCluster(t)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(cl.Addrs(), ","), MaxRetries: -1, ReadTimeout: 2 * time.Second})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := t.Context()
	const prefix = "t:"
	store := NewStore(rdb, StoreOptions{Prefix: prefix, Replicas: replica.New(rdb, 1, time.Second)})
	b := &bucketSale{ctx: ctx, store: store, sku: 79, buckets: 6}
	_, err := store.Configure(ctx, b.sku, Config{Total: 6, Limit: 1, Buckets: 6, Expires: time.Now().Add(time.Hour)}, true)
	require.NoError(t, err)
	locks := lock.New(rdb, lock.WithPrefix(prefix+"lock:"))
	t.Cleanup(func() { _ = locks.Close() })
	seller := NewSeller(ctx, rdb, store, locks, SellerOptions{Strategy: StrategyAtomic, BatchMax: 1})
	t.Cleanup(seller.Close)

	masterOf := func(bucket int) string {
		key := newKeys(prefix, Part{SKU: b.sku, Bucket: bucket}).stock
		slot, err := rdb.ClusterKeySlot(ctx, key).Result()
		require.NoError(t, err)
		addr, err := cl.MasterOf(cl.Nodes[0].Addr(), slot)
		require.NoError(t, err)
		return addr
	}
	// The receiver p and the lender q on different shards.
	p, q := 0, -1
	for bucket := 1; bucket < 6 && q < 0; bucket++ {
		if masterOf(bucket) != masterOf(p) {
			q = bucket
		}
	}
	require.GreaterOrEqual(t, q, 0, "the 6 buckets' tags all hash to one master")
	// Every bucket but q sells its unit to one of its own shoppers.
	for bucket := range 6 {
		if bucket != q {
			_, err := seller.Buy(ctx, Layout{SKU: b.sku, Buckets: 6}, Request{User: b.userIn(bucket, "own"), Qty: 1, Created: time.Now()})
			require.NoError(t, err, "bucket %d", bucket)
		}
	}

	lenderReplica := cl.Node(cl.ReplicaOf(masterOf(q)))
	lenderReplica.Freeze()
	user := b.userIn(p, "buyer")
	_, err = seller.Buy(ctx, Layout{SKU: b.sku, Buckets: 6}, Request{User: user, Qty: 1, RequestID: "r", Created: time.Now()})
	lenderReplica.Thaw()
	require.Error(t, err, "not accepted on a lend the lender's replica does not have")
	assert.ErrorIs(t, err, replica.ErrNotReplicated)
	st, ok, err := store.State(ctx, Part{SKU: b.sku, Bucket: p})
	require.NoError(t, err)
	require.True(t, ok)
	assert.Zero(t, st.Left, "nothing arrived in the receiver")
	assert.Zero(t, st.Moved)

	testsvc.WaitReplicas(t, cl.Client(masterOf(q)), 1, 30*time.Second)
	require.Eventually(t, func() bool {
		_, err := seller.Buy(ctx, Layout{SKU: b.sku, Buckets: 6}, Request{User: user, Qty: 1, RequestID: "r", Created: time.Now()})
		return err == nil
	}, 10*time.Second, 50*time.Millisecond, "once the replica is back the unit sells")
	total, ok, err := store.Sum(ctx, Layout{SKU: b.sku, Buckets: 6})
	require.NoError(t, err)
	require.True(t, ok)
	assert.Zero(t, total.Left)
	assert.Zero(t, total.Moved, "the move landed once")
	assert.Equal(t, int64(6), total.Taken(), fmt.Sprintf("%+v", total))
}
