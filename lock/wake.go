package lock

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// hub shares one Redis pub/sub connection among the local waiters of a
// Client and wakes them when a lock's release is published on its channel.
//
// A channel is subscribed while at least one local waiter waits on it. A
// release message with payload "1" (mutex, reentrant) wakes one waiter, the
// one that has waited longest without a pending wake-up, so a release does
// not send every waiter of the process to Redis at once; the others keep
// their backoff timers. Payload "a" (read-write lock) wakes every waiter of
// the channel: several readers may go at once. Every confirmation of a
// subscription, the first and each after go-redis reconnects, wakes every
// waiter of the channel too, so a release published before the subscription
// took effect, or while the connection was down, is not slept through.
//
// Waking is a non-blocking send on the waiter's channel of capacity 1: a
// waiter has at most one pending wake-up and a slow waiter never holds up
// the others.
type hub struct {
	rdb redis.UniversalClient

	mu     sync.Mutex
	ps     *redis.PubSub
	chans  map[string][]*waiter
	closed bool
	wg     sync.WaitGroup
}

// hubTimeout bounds each SUBSCRIBE and UNSUBSCRIBE.
const hubTimeout = time.Second

var errHubClosed = errors.New("lock: pub/sub closed")

// waiter is one registration on a hub's channel.
type waiter struct {
	hub     *hub
	channel string
	c       chan struct{}
}

func newHub(rdb redis.UniversalClient) *hub {
	return &hub{rdb: rdb, chans: make(map[string][]*waiter)}
}

// add registers c to be woken by the messages of channel and subscribes
// channel if it is new. After close it returns errHubClosed and a nil
// waiter. When the SUBSCRIBE fails, add returns its error together with a
// registered waiter: go-redis subscribes the channel when it reconnects.
func (h *hub) add(ctx context.Context, channel string, c chan struct{}) (*waiter, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, errHubClosed
	}
	if h.ps == nil {
		// The connection is opened by the first SUBSCRIBE; go-redis
		// reconnects and resubscribes by itself after a failure.
		h.ps = h.rdb.Subscribe(context.Background())
		msgs := h.ps.ChannelWithSubscriptions(redis.WithChannelSize(256))
		h.wg.Go(func() { h.run(msgs) })
	}
	w := &waiter{hub: h, channel: channel, c: c}
	ws, ok := h.chans[channel]
	h.chans[channel] = append(ws, w)
	if ok {
		return w, nil
	}
	// The subscription outlives the caller that happened to open it.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), hubTimeout)
	defer cancel()
	return w, h.ps.Subscribe(sctx, channel)
}

// remove unregisters w, passing on a wake-up it did not use, and
// unsubscribes its channel if w was the last one on it. It is idempotent.
func (w *waiter) remove() {
	h := w.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	ws := h.chans[w.channel]
	i := slices.Index(ws, w)
	if i < 0 {
		return
	}
	ws = slices.Delete(ws, i, i+1)
	if len(ws) > 0 {
		h.chans[w.channel] = ws
		select {
		case <-w.c:
			h.wakeLocked(w.channel, true)
		default:
		}
		return
	}
	delete(h.chans, w.channel)
	if !h.closed {
		ctx, cancel := context.WithTimeout(context.Background(), hubTimeout)
		_ = h.ps.Unsubscribe(ctx, w.channel)
		cancel()
	}
}

func (h *hub) run(msgs <-chan any) {
	for m := range msgs {
		switch m := m.(type) {
		case *redis.Message:
			h.mu.Lock()
			h.wakeLocked(m.Channel, m.Payload != "a")
			h.mu.Unlock()
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				h.mu.Lock()
				h.wakeLocked(m.Channel, false)
				h.mu.Unlock()
			}
		}
	}
}

// wakeLocked wakes every waiter of channel without a pending wake-up, or only
// the first such one, which then moves to the back of the line so that the
// next wake-up goes to the one that has waited longest.
func (h *hub) wakeLocked(channel string, one bool) {
	ws := h.chans[channel]
	for i, w := range ws {
		select {
		case w.c <- struct{}{}:
		default:
			continue // already has a pending wake-up
		}
		if one {
			copy(ws[i:], ws[i+1:])
			ws[len(ws)-1] = w
			return
		}
	}
}

// count returns the number of waiters on channel.
func (h *hub) count(channel string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.chans[channel])
}

// close drops the pub/sub connection and waits for the hub's goroutine.
// Registered waiters are no longer woken; remove still works. Idempotent.
func (h *hub) close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	ps := h.ps
	h.mu.Unlock()
	var err error
	if ps != nil {
		err = ps.Close()
	}
	h.wg.Wait()
	return err
}
