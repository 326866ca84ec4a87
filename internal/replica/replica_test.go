package replica_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/replica"
	"github.com/seckill/seckill/internal/storeerr"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testutil"
)

var incr = redis.NewScript(`return redis.call('INCR', KEYS[1])`)

// primaryWithReplica starts a private primary and a replica of it, and
// waits until the replica is in sync.
func primaryWithReplica(t *testing.T) (primary, replicaNode *testsvc.RedisServer) {
	t.Helper()
	primary = testsvc.StartRedisServer(t)
	host, port, _ := strings.Cut(primary.Addr(), ":")
	replicaNode = testsvc.StartRedisServer(t, "--replicaof", host, port)
	ctx := t.Context()
	testutil.Eventually(t, 10*time.Second, "the replica comes online", func() bool {
		info := primary.Client().Info(ctx, "replication").Val()
		return strings.Contains(info, "connected_slaves:1") && strings.Contains(info, "state=online")
	})
	return primary, replicaNode
}

// A write acknowledged by the replica is there; the reply is the script's.
func TestRunWaitsForTheReplica(t *testing.T) {
	primary, rep := primaryWithReplica(t)
	ctx := t.Context()
	w := replica.New(primary.Client(), 1, time.Second)
	cmd, err := w.Run(ctx, incr, []string{"n"})
	require.NoError(t, err)
	assert.Equal(t, int64(1), cmd.Val())
	assert.Equal(t, "1", rep.Client().Get(ctx, "n").Val(), "acknowledged means on the replica")

	// A script the server does not know yet is loaded on the way.
	require.NoError(t, primary.Client().ScriptFlush(ctx).Err())
	cmd, err = w.Run(ctx, incr, []string{"n"})
	require.NoError(t, err)
	assert.Equal(t, int64(2), cmd.Val())
}

// Too few replicas: the script ran on the primary, and the caller is told
// it is not safe yet.
func TestRunReportsAWriteTheReplicasLack(t *testing.T) {
	primary, rep := primaryWithReplica(t)
	ctx := t.Context()
	w := replica.New(primary.Client(), 2, 50*time.Millisecond)
	cmd, err := w.Run(ctx, incr, []string{"n"})
	require.ErrorIs(t, err, replica.ErrNotReplicated)
	assert.True(t, storeerr.Unavailable(err), "a client retries it")
	assert.Equal(t, int64(1), cmd.Val(), "the write ran on the primary")

	// The replica's link cut: the primary keeps answering, the wait fails.
	require.NoError(t, rep.Client().Do(ctx, "REPLICAOF", "NO", "ONE").Err())
	_, err = replica.New(primary.Client(), 1, 50*time.Millisecond).Run(ctx, incr, []string{"n"})
	require.ErrorIs(t, err, replica.ErrNotReplicated)
}

// Confirm covers writes made on other connections: it writes, then waits.
func TestConfirmCoversEarlierWrites(t *testing.T) {
	primary, rep := primaryWithReplica(t)
	ctx := t.Context()
	require.NoError(t, primary.Client().Set(ctx, "rid", "order-1", time.Hour).Err())
	w := replica.New(primary.Client(), 1, time.Second)
	require.NoError(t, w.Confirm(ctx, "rid", time.Hour))
	assert.Equal(t, "order-1", rep.Client().Get(ctx, "rid").Val())
	assert.NoError(t, replica.New(primary.Client(), 0, 0).Confirm(ctx, "rid", time.Hour), "no replicas to wait for")
}

// Without replicas to wait for, a Waiter runs the script plainly, also on
// a Cluster.
func TestRunWithoutWaiting(t *testing.T) {
	testsvc.Deployments(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		cmd, err := replica.New(rdb, 0, 0).Run(t.Context(), incr, []string{prefix + "n"})
		require.NoError(t, err)
		assert.Equal(t, int64(1), cmd.Val())
	})
}
