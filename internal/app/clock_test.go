package app

import (
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
