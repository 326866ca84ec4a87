package outbox

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/seckill/seckill/internal/backoff"
)

// Sink delivers an event to one receiver. Name identifies the receiver:
// its delivery state is kept under it, so it must stay the same across
// restarts, and differ from every other sink's. Send returns nil only once
// the receiver has acknowledged the event; it is called again with the
// same event (same id) until it does.
type Sink interface {
	Name() string
	Send(ctx context.Context, e *Event) error
}

// Options configure a Dispatcher.
type Options struct {
	Sinks       []Sink
	Concurrency int                 // deliveries in flight per sink; default 32
	Timeout     time.Duration       // one delivery to one sink; default 10s
	MaxAge      time.Duration       // retry window, then dead; default 24h
	Backoff     backoff.Exponential // delay before retry n; default 1s to 5m
	Retention   time.Duration       // delivered events are deleted after this; default 7 days
	Poll        time.Duration       // idle wait between scans; default 200ms
	Now         func() time.Time
	Log         *slog.Logger
	Metrics     *Metrics
}

// Dispatcher delivers the outbox's events to every sink, each sink on its
// own: a sink that refuses or hangs delays its own deliveries only. A
// sink's deliveries flow: up to Concurrency are in flight, and one that
// ends is replaced at once, so a slow send holds only itself and the later
// events of its order. Any
// number of dispatchers may run against one database: a delivery is leased
// by one at a time, and the lease outlives a send, so a dispatcher that dies
// mid-send leaves the delivery to another once the lease ends.
type Dispatcher struct {
	db         *gorm.DB
	o          Options
	lease      time.Duration
	expanding  sync.Mutex    // one expand at a time in this process
	registered []atomic.Bool // by sink: this dispatcher registered it
}

// NewDispatcher returns a dispatcher of db's outbox.
func NewDispatcher(db *gorm.DB, o Options) *Dispatcher {
	o.Concurrency = cmp.Or(o.Concurrency, 32)
	o.Timeout = cmp.Or(o.Timeout, 10*time.Second)
	o.MaxAge = cmp.Or(o.MaxAge, 24*time.Hour)
	o.Backoff.Min = cmp.Or(o.Backoff.Min, time.Second)
	o.Backoff.Max = cmp.Or(o.Backoff.Max, 5*time.Minute)
	o.Retention = cmp.Or(o.Retention, 7*24*time.Hour)
	o.Poll = cmp.Or(o.Poll, 200*time.Millisecond)
	o.Log = cmp.Or(o.Log, slog.Default())
	if o.Now == nil {
		o.Now = time.Now
	}
	d := &Dispatcher{db: db, o: o, lease: o.Timeout + 10*time.Second, // a send, and time to record its outcome
		registered: make([]atomic.Bool, len(o.Sinks))}
	o.Metrics.receivers(d.names())
	return d
}

// Run delivers until ctx is cancelled: one loop moves batches into outbox
// rows as fast as it can (expandLoop), and each sink has a flow of its own
// (flow); sends in flight finish (up to Timeout) and their outcomes are
// recorded. It also deletes delivered events past Retention, drops the
// receivers no dispatcher has had for as long, and keeps the backlog
// gauges current.
func (d *Dispatcher) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() { d.every(ctx, time.Minute, d.maintain) })
	wg.Go(func() { d.every(ctx, 5*time.Second, d.gauge) })
	wakes := make([]chan struct{}, len(d.o.Sinks))
	for i, s := range d.o.Sinks {
		wakes[i] = make(chan struct{}, 1)
		wg.Go(func() { d.flow(ctx, s, wakes[i]) })
	}
	wg.Go(func() { d.expandLoop(ctx, wakes) })
	wg.Wait()
	return nil
}

// expandLoop registers the sinks, then moves batches into outbox rows
// until ctx is cancelled: at once again after a move, waking every flow,
// else after Poll, or a back-off after an error.
func (d *Dispatcher) expandLoop(ctx context.Context, wakes []chan struct{}) {
	fails := 0
	for ctx.Err() == nil {
		moved := 0
		err := d.register(ctx)
		if err == nil {
			moved, err = d.expand(ctx)
		}
		wait := d.o.Poll
		switch {
		case err != nil && ctx.Err() == nil:
			wait = backoff.Exponential{Min: d.o.Poll, Max: 10 * time.Second}.Jittered(fails)
			fails++
			d.o.Log.Warn("events: expand", "err", err.Error(), "retry_in", wait.String())
		case moved > 0:
			fails, wait = 0, 0
			for _, w := range wakes {
				select {
				case w <- struct{}{}:
				default: // already woken
				}
			}
		default:
			fails = 0
		}
		if wait > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
		}
	}
}

func (d *Dispatcher) every(ctx context.Context, period time.Duration, f func(context.Context) error) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		if err := f(ctx); err != nil && ctx.Err() == nil {
			d.o.Log.Warn("events: maintenance", "err", err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Step registers the sinks no dispatcher has had yet, moves the oldest
// batches of appended events into outbox rows, then makes a round of every
// sink at once (see round), and returns how many events it moved and
// deliveries it leased. It is Run's work made once, in lockstep, for tests
// and tools that move a clock between steps.
func (d *Dispatcher) Step(ctx context.Context) (int, error) {
	if err := d.register(ctx); err != nil {
		return 0, err
	}
	moved, err := d.expand(ctx)
	if err != nil {
		return 0, err
	}
	counts := make([]int, len(d.o.Sinks))
	errs := make([]error, len(d.o.Sinks))
	var wg sync.WaitGroup
	for i, s := range d.o.Sinks {
		wg.Go(func() { counts[i], errs[i] = d.round(ctx, s) })
	}
	wg.Wait()
	for _, n := range counts {
		moved += n
	}
	return moved, errors.Join(errs...)
}

// register registers each sink this dispatcher has not yet: before it
// first moves batches into the outbox, so that a receiver it is the first
// to have gets the events of those batches.
func (d *Dispatcher) register(ctx context.Context) error {
	for i, s := range d.o.Sinks {
		if d.registered[i].Load() {
			continue
		}
		if err := register(ctx, d.db, s.Name(), d.o.Now().UTC()); err != nil {
			return err
		}
		d.registered[i].Store(true)
	}
	return nil
}

// expand moves the oldest batches into outbox rows, unless another caller
// in this process is doing so.
func (d *Dispatcher) expand(ctx context.Context) (int, error) {
	if !d.expanding.TryLock() {
		return 0, nil
	}
	defer d.expanding.Unlock()
	return expand(ctx, d.db)
}

// round leases up to Concurrency of s's due deliveries, sends them in
// parallel, waits for every send to end, and records the outcomes. It
// returns how many it leased.
func (d *Dispatcher) round(ctx context.Context, s Sink) (int, error) {
	leased, err := d.leaseDue(ctx, s, d.o.Concurrency, true)
	if err != nil || len(leased) == 0 {
		return 0, err
	}
	ended := make(chan sent, len(leased))
	for _, o := range leased {
		if o.e == nil {
			ended <- o // nothing to send
		} else {
			d.send(ctx, s, o, ended)
		}
	}
	outcomes := make([]sent, len(leased))
	for i := range outcomes {
		outcomes[i] = <-ended
	}
	return len(leased), d.settle(ctx, s.Name(), outcomes)
}

// token is a lease owner: 16 random bytes in hex.
func token() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// bounded cuts s to at most n bytes, on a character boundary.
func bounded(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// ErrNotFound is an event id or a receiver name the outbox does not have.
var ErrNotFound = errors.New("not found")
