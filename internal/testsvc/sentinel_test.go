package testsvc

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A write through the failover client that WAIT reports on one replica is
// readable there: the Sentinel set replicates, which failover tests rely on.
func TestSentinelReplicatesAcknowledgedWrite(t *testing.T) {
	c, prefix := Sentinel(t)
	replicas := SentinelReplicas(t)
	require.NotEmpty(t, replicas, "no replica up in the sentinel set")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()

	key := prefix + "acked"
	var wait *redis.Cmd
	// One connection for both: WAIT counts the replicas that have this
	// connection's writes.
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, key, "v1", time.Minute)
		wait = p.Do(ctx, "WAIT", 1, 1000)
		return nil
	})
	require.NoError(t, err)
	acked, err := wait.Int64()
	require.NoError(t, err)
	require.GreaterOrEqual(t, acked, int64(1), "WAIT 1 1000: no replica acknowledged the write")

	found := false
	for _, r := range replicas {
		v, err := r.Get(ctx, key).Result()
		if errors.Is(err, redis.Nil) {
			continue // a replica WAIT did not count
		}
		require.NoError(t, err, "GET on replica %s", r.Options().Addr)
		assert.Equal(t, "v1", v)
		found = true
	}
	assert.True(t, found, "the acknowledged key is on no replica")

	role, err := c.Do(ctx, "ROLE").Slice()
	require.NoError(t, err)
	assert.Equal(t, "master", role[0], "the failover client talks to the primary")
}

func TestReplicaUp(t *testing.T) {
	assert.True(t, replicaUp("slave"))
	assert.False(t, replicaUp("s_down,slave"))
	assert.False(t, replicaUp("slave,disconnected"))
}
