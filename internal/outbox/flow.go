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
	dl     Delivery
	e      *Event // nil: its event was deleted, nothing was sent
	owner  string // the lease it was sent under
	err    error
	unsent bool // not sent: its lease is given back
}

// A flow leases up to depth deliveries per slot in flight, so that a
// receiver that answers at once is sent many between two claims and its
// outcomes are recorded many to a write, where leasing one slot's worth at
// a time would pay a claim and a commit every few events. depth starts at
// aheadStart; it doubles, up to aheadMax, when the sends ran out of
// leased deliveries while a claim that found more than it could take was
// running, and halves, down to 1, when a leased delivery is given back
// because its lease would end before its send could (a slow receiver).
const (
	aheadStart = 32
	aheadMax   = 32
)

// flow delivers to s until ctx is cancelled, continuously. It leases up to
// depth × Concurrency deliveries, keeps up to Concurrency of them in
// flight, and fills a slot as soon as a send ends, so a slow send holds its
// own slot only (and the later events of its order, which wait for it).
// Outcomes are recorded while the sends go on: a write takes all those
// that ended since the last began. It leases more, in a goroutine of its
// own while the sends go on, once fewer than Concurrency wait for a slot;
// when nothing more is due, once the expander
// moved events (wake), an outcome is recorded (it may free the next event
// of an order), or Poll has passed; after an error, once a back-off has
// passed. A leased delivery whose lease would end before its send could
// is given back unsent. Once ctx is cancelled it leases no more, gives
// back those not sent, and returns when the sends in flight have ended
// and every outcome is recorded.
func (d *Dispatcher) flow(ctx context.Context, s Sink, wake <-chan struct{}) {
	ended := make(chan sent, d.o.Concurrency) // never full: one place per slot
	settled := make(chan int, 1)
	leased := make(chan leaseResult, 1)
	var queue, outcomes []sent
	inFlight, held, fails := 0, 0, 0 // held: leased, outcome not yet recorded
	depth := aheadStart
	settling, leasing, idle, woken := false, false, false, false
	var backOff, poll <-chan time.Time
	var fanned time.Time // the last time new events were made deliveries
	for {
		for inFlight < d.o.Concurrency && len(queue) > 0 {
			o := queue[0]
			queue = queue[1:]
			if ctx.Err() != nil || o.dl.LeaseUntil == nil || o.dl.LeaseUntil.Before(d.o.Now().Add(d.o.Timeout)) {
				if ctx.Err() == nil {
					depth = max(depth/2, 1)
				}
				o.unsent = true
				outcomes = append(outcomes, o)
				continue
			}
			inFlight++
			d.send(ctx, s, o, ended)
		}
		want := d.o.Concurrency*depth - held
		if !leasing && ctx.Err() == nil && backOff == nil && (!idle || woken) && len(queue) < d.o.Concurrency && want > 0 {
			// New events come with a wake from this process's expander,
			// else at most Poll late from another's. The claim runs
			// beside the sends: a slot that frees meanwhile is filled
			// from the queue.
			fan := woken || time.Since(fanned) >= d.o.Poll
			if fan {
				fanned = time.Now()
			}
			woken, poll, leasing = false, nil, true
			go func() {
				got, err := d.leaseDue(ctx, s, want, fan)
				leased <- leaseResult{got: got, want: want, err: err}
			}()
		}
		if !settling && len(outcomes) > 0 {
			settling = true
			batch := outcomes
			outcomes = nil
			go func() {
				if err := d.settle(ctx, s.Name(), batch); err != nil {
					// Not recorded: each is sent again once its lease ends.
					d.o.Log.Warn("events: record outcomes", "receiver", s.Name(), "err", err.Error())
				}
				settled <- len(batch)
			}()
		}
		if ctx.Err() != nil && inFlight == 0 && !settling && !leasing && len(queue) == 0 {
			return
		}
		done := ctx.Done()
		if ctx.Err() != nil {
			done, backOff, poll = nil, nil, nil // only the sends in flight, a claim and the records are left to wait for
		}
		var wakes <-chan struct{}
		if idle {
			wakes = wake
		}
		select {
		case o := <-ended:
			inFlight--
			outcomes = append(outcomes, o)
		case r := <-leased:
			leasing = false
			if r.err == nil && len(r.got) == r.want && len(queue) == 0 && inFlight < d.o.Concurrency {
				depth = min(depth*2, aheadMax) // the sends waited for this claim
			}
			held += len(r.got)
			for _, o := range r.got {
				if o.e == nil {
					outcomes = append(outcomes, o) // nothing to send
				} else {
					queue = append(queue, o)
				}
			}
			idle = len(r.got) < r.want
			switch {
			case r.err != nil && ctx.Err() == nil:
				wait := backoff.Exponential{Min: d.o.Poll, Max: 10 * time.Second}.Jittered(fails)
				fails++
				d.o.Log.Warn("events: dispatch", "receiver", s.Name(), "err", r.err.Error(), "retry_in", wait.String())
				backOff = time.After(wait)
			case r.err == nil:
				fails = 0
			}
			if idle {
				poll = time.After(d.o.Poll)
			}
		case n := <-settled:
			settling, held = false, held-n
			woken = woken || idle // an order's next event may be due now
		case <-wakes:
			woken = true
		case <-backOff:
			backOff, idle = nil, false
		case <-poll:
			poll, idle = nil, false
		case <-done:
		}
	}
}

// leaseResult is what a claim of a flow leased: got, of the want it asked
// for.
type leaseResult struct {
	got  []sent
	want int
	err  error
}

// send sends o to s in a goroutine of its own, which reports the outcome
// to ended.
func (d *Dispatcher) send(ctx context.Context, s Sink, o sent, ended chan<- sent) {
	go func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.o.Timeout)
		defer cancel()
		o.err = s.Send(sctx, o.e)
		ended <- o
	}()
}

// leaseDue leases up to n of s's due deliveries, after making deliveries of
// its new events when fan. A delivery whose event was deleted has no
// event (e nil).
func (d *Dispatcher) leaseDue(ctx context.Context, s Sink, n int, fan bool) ([]sent, error) {
	ds, events, owner, err := d.due(ctx, s.Name(), n, fan)
	if err != nil {
		return nil, err
	}
	out := make([]sent, len(ds))
	for i := range ds {
		out[i] = sent{dl: ds[i], e: events[ds[i].EventRow], owner: owner}
	}
	return out, nil
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
// retried later or dead; one whose event was deleted is dropped; one not
// sent is given back, due again at once. An
// outcome is recorded only while its lease is still the sender's.
func (d *Dispatcher) settle(ctx context.Context, name string, outcomes []sent) error {
	done, gone, back := map[string][]uint64{}, map[string][]uint64{}, map[string][]uint64{}
	var errs []error
	for i := range outcomes {
		o := &outcomes[i]
		switch {
		case o.unsent:
			back[o.owner] = append(back[o.owner], o.dl.ID)
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
	for owner, ids := range back {
		errs = append(errs, d.record(ctx, func(tx *gorm.DB) error {
			return tx.Model(&Delivery{}).Where("id IN ? AND lease_owner = ?", ids, owner).
				Updates(map[string]any{"lease_owner": nil, "lease_until": nil}).Error
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
