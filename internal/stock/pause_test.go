package stock

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/testsvc"
)

// A pause whose write times out (its Redis stalled) may still be written
// once Redis goes on: Pause unpauses that part too, so that it does not
// refuse buyers and rebuilds until the pause expires.
func TestPauseThatTimesOutLeavesNothingPaused(t *testing.T) {
	srv := testsvc.StartRedisServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ReadTimeout: 100 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	s := NewStore(rdb, StoreOptions{Prefix: "p:"})
	parts := Parts(7, 3)

	admin := srv.Client()
	require.NoError(t, admin.Do(t.Context(), "CLIENT", "PAUSE", 400, "WRITE").Err())
	_, err := s.Pause(t.Context(), parts, time.Minute)
	require.Error(t, err, "the first write timed out")

	require.Eventually(t, func() bool {
		for _, p := range parts {
			if n, err := admin.Exists(t.Context(), newKeys("p:", p).paused).Result(); err != nil || n != 0 {
				return false
			}
		}
		return true
	}, 5*time.Second, 50*time.Millisecond, "no part is left paused")
	token, err := s.Pause(t.Context(), parts, time.Minute)
	require.NoError(t, err, "a rebuild can pause the SKU again at once")
	assert.NoError(t, s.Unpause(t.Context(), parts, token))
}
