package app

import (
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every instance exports how far its clock is from Redis's: here they
// share the machine, so well under a second.
func TestEveryInstanceExportsItsClockOffset(t *testing.T) {
	s := startSale(t, saleOpts{})
	line := regexp.MustCompile(`(?m)^seckill_clock_offset_seconds (\S+)$`)
	var m []string
	require.Eventually(t, func() bool {
		m = line.FindStringSubmatch(s.do(0, "GET", "/metrics", "", nil).Raw)
		return m != nil
	}, 10*time.Second, 100*time.Millisecond)
	v, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	assert.Less(t, v, 1.0)
	assert.Greater(t, v, -1.0)
}

// A buy takes the SKU lock of the default strategy, and the lock's series
// are exported under seckill_lock_.
func TestBuyCountsTheSKULock(t *testing.T) {
	s := startSale(t, saleOpts{})
	sku := s.seed(2, 1)
	r := s.do(0, "POST", "/api/v1/orders", "alice", map[string]any{"sku_id": sku, "qty": 1})
	require.Equal(t, http.StatusAccepted, r.Status, r.Raw)
	line := regexp.MustCompile(`(?m)^seckill_lock_acquired_total\{kind="mutex"\} (\S+)$`)
	m := line.FindStringSubmatch(s.do(0, "GET", "/metrics", "", nil).Raw)
	require.NotNil(t, m, "seckill_lock_acquired_total{kind=\"mutex\"} exported")
	v, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, v, 1.0)
}
