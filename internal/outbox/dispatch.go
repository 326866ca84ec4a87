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
// own: a sink that refuses or hangs delays its own deliveries only. Any
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

// Run delivers until ctx is cancelled, each sink in a loop of its own;
// sends in flight finish (up to Timeout) and their outcomes are recorded.
// It also deletes delivered events past Retention, drops the receivers no
// dispatcher has had for as long, and keeps the backlog gauges current.
func (d *Dispatcher) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() { d.every(ctx, time.Minute, d.maintain) })
	wg.Go(func() { d.every(ctx, 5*time.Second, d.gauge) })
	for _, s := range d.o.Sinks {
		wg.Go(func() { d.loop(ctx, s) })
	}
	wg.Wait()
	return nil
}

// loop delivers to s until ctx is cancelled: a round at once after one that
// did something, else after Poll, or a back-off after an error.
func (d *Dispatcher) loop(ctx context.Context, s Sink) {
	fails := 0
	for ctx.Err() == nil {
		moved, n := 0, 0
		err := d.register(ctx)
		if err == nil {
			moved, err = d.expand(ctx)
		}
		if err == nil {
			n, err = d.round(ctx, s)
		}
		wait := d.o.Poll
		switch {
		case err != nil && ctx.Err() == nil:
			wait = backoff.Exponential{Min: d.o.Poll, Max: 10 * time.Second}.Jittered(fails)
			fails++
			d.o.Log.Warn("events: dispatch", "receiver", s.Name(), "err", err.Error(), "retry_in", wait.String())
		case moved+n > 0:
			fails, wait = 0, 0
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
// deliveries it leased.
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

// expand moves the oldest batches into outbox rows, unless another loop of
// this process is doing so.
func (d *Dispatcher) expand(ctx context.Context) (int, error) {
	if !d.expanding.TryLock() {
		return 0, nil
	}
	defer d.expanding.Unlock()
	return expand(ctx, d.db)
}

// round makes the deliveries of s's new events, leases its due ones, up to
// Concurrency (each order's first pending one only), sends them in
// parallel, and records each outcome. It returns how many it leased.
func (d *Dispatcher) round(ctx context.Context, s Sink) (int, error) {
	name := s.Name()
	_, err := fanOut(ctx, d.db, name)
	if errors.Is(err, errUnregistered) {
		if err = register(ctx, d.db, name, d.o.Now().UTC()); err == nil {
			_, err = fanOut(ctx, d.db, name)
		}
	}
	if err != nil {
		return 0, err
	}
	ds, events, owner, err := claim(ctx, d.db, name, d.o.Concurrency, d.o.Now().UTC(), d.lease)
	if err != nil || len(ds) == 0 {
		return 0, err
	}
	errs := make([]error, len(ds))
	var wg sync.WaitGroup
	for i := range ds {
		if e := events[ds[i].EventRow]; e != nil {
			wg.Go(func() {
				sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.o.Timeout)
				defer cancel()
				errs[i] = s.Send(sctx, e)
			})
		}
	}
	wg.Wait()
	var done, gone []uint64
	for i := range ds {
		e := events[ds[i].EventRow]
		switch {
		case e == nil:
			// Its event was deleted (a receiver's deliveries made
			// after events.retention): nothing to send.
			gone = append(gone, ds[i].ID)
		case errs[i] == nil:
			done = append(done, ds[i].ID)
			d.o.Metrics.delivered(name, e.Type)
		default:
			if err := d.record(ctx, func(tx *gorm.DB) error { return d.failed(tx, &ds[i], e, owner, errs[i]) }); err != nil {
				return len(ds), err
			}
		}
	}
	if len(gone) > 0 {
		err := d.record(ctx, func(tx *gorm.DB) error {
			return tx.Where("id IN ? AND lease_owner = ?", gone, owner).Delete(&Delivery{}).Error
		})
		if err != nil {
			return len(ds), err
		}
	}
	if len(done) > 0 {
		now := d.o.Now().UTC()
		err := d.record(ctx, func(tx *gorm.DB) error {
			return tx.Model(&Delivery{}).Where("id IN ? AND lease_owner = ?", done, owner).
				Updates(map[string]any{"status": StatusDelivered, "delivered_at": now, "lease_owner": nil, "lease_until": nil}).Error
		})
		if err != nil {
			return len(ds), err
		}
	}
	return len(ds), nil
}

// failed records a refused delivery of e: retried after a back-off, or
// dead once its retry window is over.
func (d *Dispatcher) failed(tx *gorm.DB, dl *Delivery, e *Event, owner string, cause error) error {
	now := d.o.Now().UTC()
	msg := bounded(cause.Error(), 255)
	up := map[string]any{"attempts": dl.Attempts + 1, "last_error": msg, "lease_owner": nil, "lease_until": nil}
	if now.Sub(dl.WindowFrom) >= d.o.MaxAge {
		up["status"] = StatusDead
		d.o.Metrics.dead(dl.Receiver, e.Type)
		d.o.Log.Error("events: dead letter", "receiver", dl.Receiver, "event_id", e.EventID, "type", e.Type,
			"attempts", dl.Attempts+1, "err", msg)
	} else {
		up["next_at"] = now.Add(d.o.Backoff.Jittered(dl.Attempts))
		d.o.Metrics.retried(dl.Receiver, e.Type)
	}
	return tx.Model(&Delivery{}).Where("id = ? AND lease_owner = ?", dl.ID, owner).Updates(up).Error
}

// record runs write until it succeeds, SQL being away, for as long as the
// lease lasts: an outcome not recorded is a delivery made again.
func (d *Dispatcher) record(ctx context.Context, write func(tx *gorm.DB) error) error {
	ctx = context.WithoutCancel(ctx)
	deadline := time.Now().Add(d.lease / 2)
	for n := 0; ; n++ {
		err := write(d.db.WithContext(ctx))
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(backoff.Exponential{Min: 50 * time.Millisecond, Max: 2 * time.Second}.Jittered(n))
	}
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
