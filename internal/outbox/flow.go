package outbox

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"

	"github.com/seckill/seckill/internal/backoff"
)

// sent is the outcome of the send of one leased delivery.
type sent struct {
	dl    Delivery
	e     *Event // nil: its event was deleted, nothing was sent
	owner string // the lease it was sent under
	err   error
}

// flow delivers to s until ctx is cancelled, continuously: it keeps up to
// Concurrency deliveries in flight, and as soon as some end it records
// their outcomes and leases as many more, so a slow send holds its own
// slot only (and the later events of its order, which wait for it). When
// nothing more is due it leases again once the expander moved events
// (wake), an outcome frees the next event of an order, or Poll has passed;
// after an error, once a back-off has passed. Once ctx is cancelled it
// leases no more and returns when the sends in flight have ended and their
// outcomes are recorded.
func (d *Dispatcher) flow(ctx context.Context, s Sink, wake <-chan struct{}) {
	ended := make(chan sent, d.o.Concurrency) // never full: one place per slot
	inFlight, fails := 0, 0
	var outcomes []sent
	var fanned time.Time // the last time new events were made deliveries
	woken := false
	for {
		var timer <-chan time.Time
		idle := false // nothing more due: a wake is worth a lease
		if ctx.Err() == nil && inFlight < d.o.Concurrency {
			want := d.o.Concurrency - inFlight
			// New events come with a wake from this process's
			// expander, else at most Poll late from another's.
			fan := woken || time.Since(fanned) >= d.o.Poll
			if fan {
				fanned, woken = time.Now(), false
			}
			n, err := d.start(ctx, s, want, ended, fan)
			inFlight += n
			switch {
			case err != nil && ctx.Err() == nil:
				wait := backoff.Exponential{Min: d.o.Poll, Max: 10 * time.Second}.Jittered(fails)
				fails++
				d.o.Log.Warn("events: dispatch", "receiver", s.Name(), "err", err.Error(), "retry_in", wait.String())
				timer = time.After(wait)
			case n < want:
				fails, idle = 0, true
				timer = time.After(d.o.Poll)
			default:
				fails = 0
			}
		}
		if ctx.Err() != nil && inFlight == 0 {
			return
		}
		done := ctx.Done()
		if ctx.Err() != nil {
			done, timer = nil, nil // only the sends in flight are left to wait for
		}
		var wakes <-chan struct{}
		if idle {
			wakes = wake
		}
		select {
		case o := <-ended:
			outcomes = d.gather(append(outcomes[:0], o), inFlight, ended)
			if err := d.settle(ctx, s.Name(), outcomes); err != nil {
				// Not recorded: each is sent again once its lease ends.
				d.o.Log.Warn("events: record outcomes", "receiver", s.Name(), "err", err.Error())
			}
			inFlight -= len(outcomes)
		case <-wakes:
			woken = true
		case <-timer:
		case <-done:
		}
	}
}

// linger is how long a flow waits, after a send ended, for more to end
// before it records them and leases as many more: a few milliseconds turn
// the outcomes of a receiver that answers at once into one write and one
// lease, where each alone would cost both.
const linger = 5 * time.Millisecond

// gather adds to outcomes those of the other sends in flight (of inFlight)
// that end within linger, or until half the slots are free or none is in
// flight.
func (d *Dispatcher) gather(outcomes []sent, inFlight int, ended <-chan sent) []sent {
	enough := func() bool {
		left := inFlight - len(outcomes)
		return left == 0 || d.o.Concurrency-left >= (d.o.Concurrency+1)/2
	}
	for more := true; more; { // those ended already
		select {
		case o := <-ended:
			outcomes = append(outcomes, o)
		default:
			more = false
		}
	}
	if enough() {
		return outcomes
	}
	t := time.NewTimer(linger)
	defer t.Stop()
	for !enough() {
		select {
		case o := <-ended:
			outcomes = append(outcomes, o)
		case <-t.C:
			return outcomes
		}
	}
	return outcomes
}

// start leases up to n of s's due deliveries, after making deliveries of
// its new events when fan, and sends each in a goroutine of its own that
// reports its outcome to ended; it returns how many it leased. A delivery
// whose event was deleted is reported at once.
func (d *Dispatcher) start(ctx context.Context, s Sink, n int, ended chan<- sent, fan bool) (int, error) {
	ds, events, owner, err := d.due(ctx, s.Name(), n, fan)
	if err != nil {
		return 0, err
	}
	for i := range ds {
		o := sent{dl: ds[i], e: events[ds[i].EventRow], owner: owner}
		if o.e == nil {
			ended <- o
			continue
		}
		go func() {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.o.Timeout)
			defer cancel()
			o.err = s.Send(sctx, o.e)
			ended <- o
		}()
	}
	return len(ds), nil
}

// due makes the deliveries to receiver name of its new events when fan,
// then leases up to n of its due ones (each order's first pending one
// only).
func (d *Dispatcher) due(ctx context.Context, name string, n int, fan bool) ([]Delivery, map[uint64]*Event, string, error) {
	if fan {
		_, err := fanOut(ctx, d.db, name)
		if errors.Is(err, errUnregistered) {
			if err = register(ctx, d.db, name, d.o.Now().UTC()); err == nil {
				_, err = fanOut(ctx, d.db, name)
			}
		}
		if err != nil {
			return nil, nil, "", err
		}
	}
	return claim(ctx, d.db, name, n, d.o.Now().UTC(), d.lease)
}

// settle records the outcomes of sends to receiver name: the acknowledged
// deliveries are delivered, a statement per lease; a refused one is
// retried later or dead; one whose event was deleted is dropped. An
// outcome is recorded only while its lease is still the sender's.
func (d *Dispatcher) settle(ctx context.Context, name string, outcomes []sent) error {
	done, gone := map[string][]uint64{}, map[string][]uint64{}
	var errs []error
	for i := range outcomes {
		o := &outcomes[i]
		switch {
		case o.e == nil:
			// Its event was deleted (a receiver's deliveries made
			// after events.retention): nothing to send.
			gone[o.owner] = append(gone[o.owner], o.dl.ID)
		case o.err == nil:
			done[o.owner] = append(done[o.owner], o.dl.ID)
			d.o.Metrics.delivered(name, o.e.Type)
		default:
			errs = append(errs, d.record(ctx, func(tx *gorm.DB) error { return d.failed(tx, &o.dl, o.e, o.owner, o.err) }))
		}
	}
	for owner, ids := range gone {
		errs = append(errs, d.record(ctx, func(tx *gorm.DB) error {
			return tx.Where("id IN ? AND lease_owner = ?", ids, owner).Delete(&Delivery{}).Error
		}))
	}
	now := d.o.Now().UTC()
	for owner, ids := range done {
		errs = append(errs, d.record(ctx, func(tx *gorm.DB) error {
			return tx.Model(&Delivery{}).Where("id IN ? AND lease_owner = ?", ids, owner).
				Updates(map[string]any{"status": StatusDelivered, "delivered_at": now, "lease_owner": nil, "lease_until": nil}).Error
		}))
	}
	return errors.Join(errs...)
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
