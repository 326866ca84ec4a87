// Package fanout shares one Redis pub/sub connection among the local waiters
// of a process and wakes them when a message arrives on their channel.
//
// A [Hub] subscribes a channel while at least one waiter or listener is
// registered on it and unsubscribes it when the last one leaves. It opens its
// connection on the first registration; go-redis reconnects it after a
// failure and subscribes every registered channel again. A message sent
// while the connection is down is lost: a waiter must have its own fallback
// (a timer), and a Hub made with [Options.WakeOnSubscribe] wakes every waiter
// of a channel whenever its subscription is confirmed, first or again, so
// that they check for themselves what they may have missed.
//
// Waking is a non-blocking send on the waiter's channel, whose capacity
// should be 1: a waiter has at most one pending wake-up and a slow waiter
// never holds up the others.
package fanout

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrClosed is returned by Add and Listen after Close.
var ErrClosed = errors.New("fanout: hub closed")

// Options configure a Hub. The zero value wakes every waiter of a channel on
// each of its messages.
type Options struct {
	// WakeOne reports whether a message with this payload wakes only one
	// waiter of its channel — the one that has waited longest without a
	// pending wake-up — instead of all of them. Nil: every message wakes all.
	// With it, a waiter that leaves with a wake-up it did not use passes it
	// on to the next, so wake-one never strands the others.
	WakeOne func(payload string) bool
	// WakeOnSubscribe makes every confirmation of a channel's subscription
	// (the first one and each after go-redis reconnects) wake all waiters of
	// the channel, so a message published before the subscription took
	// effect is not slept through.
	WakeOnSubscribe bool
	// Timeout bounds each SUBSCRIBE and UNSUBSCRIBE; 0 leaves them to the
	// client's own write timeout.
	Timeout time.Duration
}

// Hub fans the messages of Redis pub/sub channels out to local waiters over
// one shared connection. It is safe for concurrent use.
type Hub struct {
	rdb redis.UniversalClient
	o   Options

	mu     sync.Mutex
	ps     *redis.PubSub
	chans  map[string][]*Waiter
	closed bool
	wg     sync.WaitGroup
}

// Waiter is one registration on a Hub's channel.
type Waiter struct {
	hub     *Hub
	channel string
	c       chan struct{}        // woken (Add)
	fn      func(payload string) // called (Listen)
}

// New returns a Hub on rdb. It opens no connection until the first
// registration.
func New(rdb redis.UniversalClient, o Options) *Hub {
	return &Hub{rdb: rdb, o: o, chans: make(map[string][]*Waiter)}
}

// Add registers c to be woken (by a non-blocking send) by the messages of
// channel, as the Hub's Options say, and subscribes channel if it is new.
// c may be shared with other registrations and with the caller's own
// signals; a capacity of 1 suits it.
//
// After Close it returns ErrClosed and a nil Waiter. When the SUBSCRIBE
// fails, Add returns its error together with a registered Waiter: go-redis
// subscribes the channel when it reconnects, so a caller that can live
// without wake-ups until then keeps it; one that cannot calls Remove.
func (h *Hub) Add(ctx context.Context, channel string, c chan struct{}) (*Waiter, error) {
	return h.add(ctx, &Waiter{hub: h, channel: channel, c: c})
}

// Listen registers fn to be called with the payload of every message of
// channel, and subscribes channel if it is new. fn runs on the Hub's
// goroutine with the Hub locked: it must be quick and must not call the Hub.
// Subscription confirmations do not call it. Errors are those of Add.
func (h *Hub) Listen(ctx context.Context, channel string, fn func(payload string)) (*Waiter, error) {
	return h.add(ctx, &Waiter{hub: h, channel: channel, fn: fn})
}

func (h *Hub) add(ctx context.Context, w *Waiter) (*Waiter, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	if h.ps == nil {
		// The connection is opened by the first SUBSCRIBE; go-redis
		// reconnects and resubscribes by itself after a failure.
		h.ps = h.rdb.Subscribe(context.Background())
		msgs := h.ps.ChannelWithSubscriptions(redis.WithChannelSize(256))
		h.wg.Go(func() { h.run(msgs) })
	}
	ws, ok := h.chans[w.channel]
	h.chans[w.channel] = append(ws, w)
	if ok {
		return w, nil
	}
	// The subscription outlives the caller that happened to open it.
	sctx, cancel := h.opCtx(context.WithoutCancel(ctx))
	defer cancel()
	return w, h.ps.Subscribe(sctx, w.channel)
}

func (h *Hub) opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if h.o.Timeout > 0 {
		return context.WithTimeout(ctx, h.o.Timeout)
	}
	return ctx, func() {}
}

// Remove unregisters w and unsubscribes its channel if w was the last one
// on it. It is idempotent.
func (w *Waiter) Remove() {
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
		if h.o.WakeOne != nil && w.c != nil {
			select {
			case <-w.c:
				h.wakeLocked(w.channel, true)
			default:
			}
		}
		return
	}
	delete(h.chans, w.channel)
	if !h.closed {
		ctx, cancel := h.opCtx(context.Background())
		_ = h.ps.Unsubscribe(ctx, w.channel)
		cancel()
	}
}

func (h *Hub) run(msgs <-chan any) {
	for m := range msgs {
		switch m := m.(type) {
		case *redis.Message:
			h.deliver(m.Channel, m.Payload)
		case *redis.Subscription:
			if m.Kind == "subscribe" && h.o.WakeOnSubscribe {
				h.mu.Lock()
				h.wakeLocked(m.Channel, false)
				h.mu.Unlock()
			}
		}
	}
}

// deliver hands a message to the listeners of channel and wakes its waiters.
func (h *Hub) deliver(channel, payload string) {
	one := h.o.WakeOne != nil && h.o.WakeOne(payload)
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, w := range h.chans[channel] {
		if w.fn != nil {
			w.fn(payload)
		}
	}
	h.wakeLocked(channel, one)
}

// wakeLocked wakes every waiter of channel without a pending wake-up, or only
// the first such one, which then moves to the back of the line so that the
// next wake-up goes to the one that has waited longest.
func (h *Hub) wakeLocked(channel string, one bool) {
	ws := h.chans[channel]
	for i, w := range ws {
		if w.c == nil {
			continue
		}
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

// Count returns the number of registrations on channel.
func (h *Hub) Count(channel string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.chans[channel])
}

// Close drops the pub/sub connection and waits for the Hub's goroutine to
// stop. Registered waiters are no longer woken; Remove still works. Close is
// idempotent.
func (h *Hub) Close() error {
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
