package queue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/queue"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testutil"
)

// Tasks a handler leaves with EnqueueOnAck are enqueued by the script that
// settles its batch: with the ack of an acked batch, on their own after a
// batch that failed; one already present is left as it is. A bad task is
// refused at once, and outside a handler the call enqueues at once.
func TestFollowUpsEnqueuedWithTheAck(t *testing.T) {
	testsvc.Backends(t, func(t *testing.T, cluster bool) {
		q, _ := newQueue(t, cluster, "then", queue.Options{Backoff: func(int) time.Duration { return time.Hour }})
		ctx := testutil.Context(t, 60*time.Second)
		later := time.Now().Add(time.Hour).Truncate(time.Millisecond)
		follow := func(id string) queue.Task { return queue.Task{ID: id, Type: "next", Payload: []byte(id), Due: later} }
		enqueue(ctx, t, q, follow("present"))

		bad := make(chan error, 1)
		h := func(ctx context.Context, ts []*queue.Claimed) []error {
			errs := make([]error, len(ts))
			for i, c := range ts {
				assert.NoError(t, q.EnqueueOnAck(ctx, []queue.Task{follow("after-" + c.ID), follow("present")}))
				if c.ID == "fails" {
					errs[i] = errors.New("refused")
				}
			}
			bad <- q.EnqueueOnAck(ctx, []queue.Task{{Type: "next"}})
			return errs
		}
		stop := runConsumer(t, queue.NewConsumer(q, h, queue.ConsumerOptions{MaxIdle: 50 * time.Millisecond}))
		for _, id := range []string{"acked", "fails"} {
			enqueue(ctx, t, q, task(id))
			require.ErrorIs(t, <-bad, queue.ErrEmptyID)
			testutil.Eventually(t, 30*time.Second, "follow-up of "+id, func() bool {
				in, err := q.Inspect(ctx, "after-"+id)
				return err == nil && in.State == queue.StatePending
			})
		}
		stop()

		_, err := q.Inspect(ctx, "acked")
		assert.ErrorIs(t, err, queue.ErrNotFound, "acked with its follow-up")
		in, err := q.Inspect(ctx, "fails")
		require.NoError(t, err)
		assert.Equal(t, "refused", in.LastError, "nacked; its follow-up enqueued all the same")
		for _, id := range []string{"after-acked", "after-fails", "present"} {
			in, err := q.Inspect(ctx, id)
			require.NoError(t, err, id)
			assert.Equal(t, later, in.Due, id)
			assert.Equal(t, []byte(id), in.Payload, id)
			assert.Zero(t, in.Attempts, id)
		}

		require.NoError(t, q.EnqueueOnAck(ctx, []queue.Task{follow("outside")}))
		in, err = q.Inspect(ctx, "outside")
		require.NoError(t, err, "enqueued at once outside a handler")
		assert.Equal(t, queue.StatePending, in.State)
	})
}
