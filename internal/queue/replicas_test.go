package queue_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/queue"
	"github.com/seckill/seckill/internal/replica"
	"github.com/seckill/seckill/internal/testsvc"
)

// A claim the replicas do not acknowledge hands out nothing and gives its
// tasks back at once: a consumer never acts on a task a failover could make
// the queue forget, and the task is not stuck until its lease ends.
func TestClaimWaitsForReplicas(t *testing.T) {
	primary := testsvc.StartRedisServer(t) // no replica: WAIT 1 never succeeds
	c := primary.Client()
	ctx := t.Context()
	waiting, err := queue.New(c, "orders", queue.Options{Replicas: replica.New(c, 1, 20*time.Millisecond)})
	require.NoError(t, err)
	_, err = waiting.Enqueue(ctx, task("a"))
	require.NoError(t, err)

	got, err := waiting.Claim(ctx, 10, time.Minute)
	require.ErrorIs(t, err, replica.ErrNotReplicated)
	assert.Empty(t, got)
	st, err := waiting.Stats(ctx)
	require.NoError(t, err)
	assert.Zero(t, st.InFlight, "the claimed task went back")

	plain, err := queue.New(c, "orders", queue.Options{})
	require.NoError(t, err)
	got, err = plain.Claim(ctx, 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "a", got[0].ID)
}
