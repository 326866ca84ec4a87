package lock

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// notifier shares one pub/sub connection among all waiters of a Client. A
// channel is subscribed while at least one local waiter waits on it. A release
// message with payload "1" (mutex, reentrant) wakes one local waiter, the one
// that has waited longest without a pending wake-up, so a release does not
// send every waiter of the process to Redis at once; the others keep their
// backoff timers. Payload "a" (read-write lock) and a (re)subscription
// confirmation wake every waiter of the channel: several readers may go at
// once, and a release published before the subscription took effect must not
// be slept through.
type notifier struct {
	rdb redis.UniversalClient

	mu     sync.Mutex
	ps     *redis.PubSub
	chans  map[string][]*waiter
	closed bool
	wg     sync.WaitGroup
}

type waiter struct {
	channel string
	c       chan struct{} // capacity 1: at most one pending wake-up
}

func newNotifier(rdb redis.UniversalClient) *notifier {
	return &notifier{rdb: rdb, chans: make(map[string][]*waiter)}
}

// add registers a waiter on channel and subscribes it when it is new. It
// returns nil when the notifier is closed.
func (n *notifier) add(channel string) *waiter {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil
	}
	if n.ps == nil {
		// The connection is opened by the first SUBSCRIBE; go-redis
		// reconnects and resubscribes by itself after a failure.
		n.ps = n.rdb.Subscribe(context.Background())
		msgs := n.ps.ChannelWithSubscriptions(redis.WithChannelSize(256))
		n.wg.Add(1)
		go n.run(msgs)
	}
	w := &waiter{channel: channel, c: make(chan struct{}, 1)}
	ws, ok := n.chans[channel]
	n.chans[channel] = append(ws, w)
	if !ok {
		// A failed SUBSCRIBE only costs the wake-up: waiters keep their
		// backoff timers.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = n.ps.Subscribe(ctx, channel)
		cancel()
	}
	return w
}

// remove unregisters w. A wake-up it received but did not use is passed on
// to the next waiter, so wake-one never strands the others.
func (n *notifier) remove(w *waiter) {
	n.mu.Lock()
	defer n.mu.Unlock()
	ws := n.chans[w.channel]
	i := slices.Index(ws, w)
	if i < 0 {
		return
	}
	ws = slices.Delete(ws, i, i+1)
	if len(ws) > 0 {
		n.chans[w.channel] = ws
		select {
		case <-w.c:
			n.wakeLocked(w.channel, false)
		default:
		}
		return
	}
	delete(n.chans, w.channel)
	if !n.closed {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = n.ps.Unsubscribe(ctx, w.channel)
		cancel()
	}
}

func (n *notifier) run(msgs <-chan any) {
	defer n.wg.Done()
	for m := range msgs {
		switch m := m.(type) {
		case *redis.Message:
			n.wake(m.Channel, m.Payload == "a")
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				n.wake(m.Channel, true)
			}
		}
	}
}

func (n *notifier) wake(channel string, all bool) {
	n.mu.Lock()
	n.wakeLocked(channel, all)
	n.mu.Unlock()
}

func (n *notifier) wakeLocked(channel string, all bool) {
	ws := n.chans[channel]
	for i, w := range ws {
		select {
		case w.c <- struct{}{}:
		default:
			continue // already has a pending wake-up
		}
		if !all {
			// Move the woken waiter to the back: the next release wakes
			// the one that has waited longest.
			copy(ws[i:], ws[i+1:])
			ws[len(ws)-1] = w
			return
		}
	}
}

// close stops the pub/sub connection and waits for the dispatch goroutine.
func (n *notifier) close() {
	n.mu.Lock()
	n.closed = true
	ps := n.ps
	n.mu.Unlock()
	if ps != nil {
		_ = ps.Close()
	}
	n.wg.Wait()
}

// count returns the number of local waiters on channel (for tests).
func (n *notifier) count(channel string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.chans[channel])
}
