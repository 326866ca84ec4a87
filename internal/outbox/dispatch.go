package outbox

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/seckill/seckill/internal/backoff"
)

// Sink delivers an event to one receiver. Send returns nil only once the
// receiver has acknowledged it; it is called again with the same event
// (same id) until it does.
type Sink interface {
	Name() string
	Send(ctx context.Context, e *Event) error
}

// Options configure a Dispatcher.
type Options struct {
	Sinks       []Sink
	Concurrency int                 // deliveries in flight; default 32
	Timeout     time.Duration       // one delivery to one sink; default 10s
	MaxAge      time.Duration       // retry window, then dead; default 24h
	Backoff     backoff.Exponential // delay before retry n; default 1s to 5m
	Retention   time.Duration       // delivered events are deleted after this; default 7 days
	Poll        time.Duration       // idle wait between scans; default 200ms
	Now         func() time.Time
	Log         *slog.Logger
	Metrics     *Metrics
}

// Dispatcher delivers the outbox's pending events to every sink. Any number
// of dispatchers may run against one database: an event is leased by one at
// a time, and the lease outlives a delivery to every sink, so a dispatcher
// that dies mid-delivery leaves the event to another once it ends.
type Dispatcher struct {
	db    *gorm.DB
	o     Options
	lease time.Duration
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
	// Every sink in turn, each up to Timeout, and time to record the
	// outcome.
	lease := time.Duration(len(o.Sinks)+1)*o.Timeout + 10*time.Second
	return &Dispatcher{db: db, o: o, lease: lease}
}

// Run delivers until ctx is cancelled; deliveries in flight finish (up to
// Timeout) and their outcomes are recorded. It also deletes delivered
// events past Retention and keeps the backlog gauges current.
func (d *Dispatcher) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() { d.every(ctx, time.Minute, d.retain) })
	wg.Go(func() { d.every(ctx, 5*time.Second, d.gauge) })
	defer wg.Wait()
	fails := 0
	for ctx.Err() == nil {
		n, err := d.Step(ctx)
		wait := d.o.Poll
		switch {
		case err != nil && ctx.Err() == nil:
			wait = backoff.Exponential{Min: d.o.Poll, Max: 10 * time.Second}.Jittered(fails)
			fails++
			d.o.Log.Warn("events: dispatch", "err", err.Error(), "retry_in", wait.String())
		case n > 0:
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
	return nil
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

// Step moves the oldest batches of appended events into outbox rows, then
// leases the events due now, up to Concurrency, the first pending one of
// each order only, delivers them to every sink in parallel, and records
// each outcome. It returns how many events it moved or leased.
func (d *Dispatcher) Step(ctx context.Context) (int, error) {
	moved, err := expand(ctx, d.db)
	if err != nil {
		return 0, err
	}
	events, owner, err := d.claim(ctx)
	if err != nil || len(events) == 0 {
		return moved, err
	}
	errs := make([]error, len(events))
	var wg sync.WaitGroup
	for i := range events {
		wg.Go(func() { errs[i] = d.deliver(context.WithoutCancel(ctx), &events[i]) })
	}
	wg.Wait()
	var done []uint64
	for i, e := range events {
		if errs[i] == nil {
			done = append(done, e.ID)
			d.o.Metrics.delivered(e.Type)
			continue
		}
		if err := d.record(ctx, func(tx *gorm.DB) error { return d.failed(tx, &e, owner, errs[i]) }); err != nil {
			return moved + len(events), err
		}
	}
	if len(done) > 0 {
		now := d.o.Now().UTC()
		err := d.record(ctx, func(tx *gorm.DB) error {
			return tx.Model(&Event{}).Where("id IN ? AND lease_owner = ?", done, owner).
				Updates(map[string]any{"status": StatusDelivered, "delivered_at": now, "lease_owner": nil, "lease_until": nil}).Error
		})
		if err != nil {
			return moved + len(events), err
		}
	}
	return moved + len(events), nil
}

// claim leases up to Concurrency due events under a new owner token and
// returns them. An event is due when it is pending, its next try has come,
// no lease holds it, and no pending event of its order was written before
// it (events of one order go out in order).
func (d *Dispatcher) claim(ctx context.Context) ([]Event, string, error) {
	now := d.o.Now().UTC()
	db := d.db.WithContext(ctx)
	var ids []uint64
	err := db.Raw(`SELECT o.id FROM outbox o
		WHERE o.status = ? AND o.next_at <= ? AND (o.lease_until IS NULL OR o.lease_until < ?)
		AND NOT EXISTS (SELECT 1 FROM outbox p WHERE p.order_id = o.order_id AND p.status = ? AND p.id < o.id)
		ORDER BY o.id LIMIT ?`, StatusPending, now, now, StatusPending, d.o.Concurrency).Scan(&ids).Error
	if err != nil || len(ids) == 0 {
		return nil, "", err
	}
	owner := token()
	until := now.Add(d.lease)
	res := db.Model(&Event{}).
		Where("id IN ? AND status = ? AND (lease_until IS NULL OR lease_until < ?)", ids, StatusPending, now).
		Updates(map[string]any{"lease_owner": owner, "lease_until": until})
	if res.Error != nil || res.RowsAffected == 0 {
		return nil, "", res.Error
	}
	var events []Event
	if err := db.Where("id IN ? AND lease_owner = ?", ids, owner).Order("id").Find(&events).Error; err != nil {
		return nil, "", err
	}
	return events, owner, nil
}

// deliver sends e to every sink, each within Timeout; the first refusal
// ends it (the event is tried again later, on every sink).
func (d *Dispatcher) deliver(ctx context.Context, e *Event) error {
	for _, s := range d.o.Sinks {
		sctx, cancel := context.WithTimeout(ctx, d.o.Timeout)
		err := s.Send(sctx, e)
		cancel()
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name(), err)
		}
	}
	return nil
}

// failed records a refused delivery of e: retried after a back-off, or dead
// once its retry window is over.
func (d *Dispatcher) failed(tx *gorm.DB, e *Event, owner string, cause error) error {
	now := d.o.Now().UTC()
	msg := bounded(cause.Error(), 255)
	up := map[string]any{"attempts": e.Attempts + 1, "last_error": msg, "lease_owner": nil, "lease_until": nil}
	if now.Sub(e.WindowFrom) >= d.o.MaxAge {
		up["status"] = StatusDead
		d.o.Metrics.dead(e.Type)
		d.o.Log.Error("events: dead letter", "event_id", e.EventID, "type", e.Type, "attempts", e.Attempts+1, "err", msg)
	} else {
		up["next_at"] = now.Add(d.o.Backoff.Jittered(e.Attempts))
		d.o.Metrics.retried(e.Type)
	}
	return tx.Model(&Event{}).Where("id = ? AND lease_owner = ?", e.ID, owner).Updates(up).Error
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

// retain deletes delivered events older than Retention, a bounded batch at
// a time.
func (d *Dispatcher) retain(ctx context.Context) error {
	const batch = 1000
	for ctx.Err() == nil {
		before := d.o.Now().UTC().Add(-d.o.Retention)
		var ids []uint64
		if err := d.db.WithContext(ctx).Model(&Event{}).Where("status = ? AND delivered_at < ?", StatusDelivered, before).
			Order("delivered_at").Limit(batch).Pluck("id", &ids).Error; err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		if err := d.db.WithContext(ctx).Where("id IN ? AND status = ?", ids, StatusDelivered).Delete(&Event{}).Error; err != nil {
			return err
		}
		d.o.Metrics.deleted(len(ids))
		if len(ids) < batch {
			return nil
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

// gauge refreshes the backlog gauges.
func (d *Dispatcher) gauge(ctx context.Context) error {
	if d.o.Metrics == nil {
		return nil
	}
	c, err := Count(ctx, d.db, d.o.Now())
	if err != nil {
		return err
	}
	d.o.Metrics.backlog(c)
	return nil
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

// ErrNotFound is an event id the outbox does not have.
var ErrNotFound = errors.New("event not found")
