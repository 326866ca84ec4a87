package pace

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testutil"
)

// Two processes' counts add up per second; Best is the best second of the
// last minute, read at most once a second.
func TestBestIsTheBestSecondOfEveryInstance(t *testing.T) {
	rdb, prefix := testsvc.Redis(t)
	clock := testutil.NewClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	a, b := New(rdb, prefix, clock.Now), New(rdb, prefix, clock.Now)
	assert.Zero(t, a.Best(t.Context()), "nothing persisted yet")

	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() { a.Add(3) })
		wg.Go(func() { b.Add(2) })
	}
	wg.Wait()
	a.Flush(t.Context())
	b.Flush(t.Context())
	assert.Zero(t, a.Best(t.Context()), "read less than a second ago")
	clock.Advance(time.Second)
	assert.EqualValues(t, 500, a.Best(t.Context()))

	b.Add(100)
	b.Flush(t.Context())
	clock.Advance(time.Second)
	assert.EqualValues(t, 500, b.Best(t.Context()), "the best second, not the last")

	clock.Advance(Window)
	assert.Zero(t, b.Best(t.Context()), "older than the window")
}

// The counters of one run share a hash tag: Best reads them in one MGET on
// a Redis Cluster.
func TestBestOnACluster(t *testing.T) {
	rdb, prefix := testsvc.Cluster(t)
	clock := testutil.NewClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	p := New(rdb, prefix, clock.Now)
	p.Add(7)
	p.Flush(t.Context())
	clock.Advance(time.Second)
	assert.EqualValues(t, 7, p.Best(t.Context()))
}
