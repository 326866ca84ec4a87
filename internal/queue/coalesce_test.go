package queue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/queue"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testutil"
)

// TestConcurrentEnqueueCoalesces hammers Enqueue from many goroutines with
// overlapping ids, some of them with contexts that end at once or mid-wait:
// every call returns, each id is added by exactly one call, and a call that
// returns its context's error added nothing.
func TestConcurrentEnqueueCoalesces(t *testing.T) {
	testsvc.Backends(t, func(t *testing.T, cluster bool) {
		q, c := newQueue(t, cluster, "coalesce", queue.Options{})
		timer := &callTimer{}
		c.AddHook(timer)
		const (
			goroutines = 32
			calls      = 200
			ids        = 2000
		)
		var (
			mu        sync.Mutex
			addedBy   = map[string]int{}
			cancelled int
		)
		var wg sync.WaitGroup
		for g := range goroutines {
			wg.Go(func() {
				for i := range calls {
					id := fmt.Sprint("o", (g*7919+i*104729)%ids)
					ctx, cancel := context.WithCancel(t.Context())
					switch i % 10 {
					case 0:
						cancel() // gone before it starts
					case 1:
						ctx, cancel = context.WithTimeout(t.Context(), time.Duration(i%3)*100*time.Microsecond)
					}
					added, err := q.Enqueue(ctx, task(id))
					cancel()
					mu.Lock()
					switch {
					case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
						assert.False(t, added)
						cancelled++
					case err != nil:
						t.Errorf("enqueue %s: %v", id, err)
					case added:
						addedBy[id]++
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		ctx := testutil.Context(t, 60*time.Second)
		for id, n := range addedBy {
			assert.Equal(t, 1, n, "id %s added by %d calls", id, n)
		}
		st, err := q.Stats(ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(len(addedBy)), st.Due, "exactly the reported tasks are stored")
		timer.mu.Lock()
		scripts := len(timer.times)
		timer.mu.Unlock()
		t.Logf("%d calls sent in %d Redis calls; %d distinct tasks added, %d calls ended by their context",
			goroutines*calls, scripts, len(addedBy), cancelled)
		assert.Positive(t, cancelled)
	})
}
