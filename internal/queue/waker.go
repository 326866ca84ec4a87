package queue

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Waker shares one pub/sub connection among all the consumers of a process,
// so hundreds of idle queues cost one connection and no polling beyond each
// consumer's MaxIdle timer. The enqueue script publishes on a queue's wake
// channel only when the new task becomes the earliest of that queue (a
// sleeping consumer must re-plan), so busy queues publish almost never.
//
// A lost message (for example during a reconnect) only delays a consumer
// until its MaxIdle timer fires. Create one per process, pass it in
// ConsumerOptions.Waker and Close it after the consumers have stopped.
type Waker struct {
	c redis.UniversalClient

	mu     sync.Mutex
	ps     *redis.PubSub
	subs   map[string]map[chan struct{}]int
	closed bool
	done   chan struct{}
}

// NewWaker returns a Waker on c. It connects on the first registration.
func NewWaker(c redis.UniversalClient) *Waker {
	return &Waker{c: c, subs: make(map[string]map[chan struct{}]int), done: make(chan struct{})}
}

// register makes the Waker signal ch (without blocking) on each message of
// channel, and returns the function that undoes it.
func (w *Waker) register(ctx context.Context, channel string, ch chan struct{}) (func(), error) {
	// The connection outlives the consumer that happened to open it.
	ctx = context.WithoutCancel(ctx)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return func() {}, nil
	}
	if w.subs[channel] == nil {
		w.subs[channel] = make(map[chan struct{}]int)
		if w.ps == nil {
			w.ps = w.c.Subscribe(ctx, channel)
			go w.loop(w.ps)
		} else if err := w.ps.Subscribe(ctx, channel); err != nil {
			delete(w.subs, channel)
			return nil, err
		}
	}
	w.subs[channel][ch]++
	return func() { w.unregister(channel, ch) }, nil
}

func (w *Waker) unregister(channel string, ch chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	set := w.subs[channel]
	if set == nil {
		return
	}
	if set[ch]--; set[ch] <= 0 {
		delete(set, ch)
	}
	if len(set) == 0 {
		delete(w.subs, channel)
		if w.ps != nil && !w.closed {
			_ = w.ps.Unsubscribe(context.Background(), channel)
		}
	}
}

func (w *Waker) loop(ps *redis.PubSub) {
	defer close(w.done)
	for msg := range ps.Channel() {
		w.mu.Lock()
		for ch := range w.subs[msg.Channel] {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
		w.mu.Unlock()
	}
}

// Close drops the pub/sub connection and waits for its reader to stop.
// Consumers still running fall back to their MaxIdle timers.
func (w *Waker) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	ps := w.ps
	w.mu.Unlock()
	if ps == nil {
		return nil
	}
	err := ps.Close()
	<-w.done
	return err
}
