package queue

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/fanout"
)

// Waker shares one pub/sub connection among all the consumers of a process,
// so hundreds of idle queues cost one connection and no polling beyond each
// consumer's MaxIdle timer. The enqueue script publishes on a queue's wake
// channel only when the new task becomes the earliest of that queue (a
// sleeping consumer must re-plan), so busy queues publish almost never; a
// consumer wakes only for a task due within its MaxIdle.
//
// A lost message (for example during a reconnect) only delays a consumer
// until its MaxIdle timer fires. Create one per process, pass it in
// ConsumerOptions.Waker and Close it after the consumers have stopped.
type Waker struct {
	hub *fanout.Hub
}

// NewWaker returns a Waker on c. It connects on the first registration.
func NewWaker(c redis.UniversalClient) *Waker {
	// Every message reaches every consumer of its queue.
	return &Waker{hub: fanout.New(c, fanout.Options{})}
}

// register makes the Waker call fn with each message of channel, on its
// reader goroutine (fn must not block), and returns the function that undoes
// it.
func (w *Waker) register(ctx context.Context, channel string, fn func(payload string)) (func(), error) {
	r, err := w.hub.Listen(ctx, channel, fn)
	switch {
	case errors.Is(err, fanout.ErrClosed):
		return func() {}, nil
	case err != nil:
		r.Remove()
		return nil, err
	}
	return r.Remove, nil
}

// Close drops the pub/sub connection and waits for its reader to stop.
// Consumers still running fall back to their MaxIdle timers.
func (w *Waker) Close() error { return w.hub.Close() }
