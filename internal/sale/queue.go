package sale

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/seckill/seckill/internal/order"
	"github.com/seckill/seckill/internal/orderid"
	"github.com/seckill/seckill/internal/queue"
	"github.com/seckill/seckill/internal/stock"
)

// ErrTaskNotFound means there is no such task (or dead letter) in the SKU's
// queue.
var ErrTaskNotFound = errors.New("task not found")

// TaskView is what an operator sees of a queue task.
type TaskView struct {
	ID         string          `json:"id"`
	Type       string          `json:"type"`
	State      string          `json:"state"`
	At         time.Time       `json:"at"` // due (pending), lease end (in flight), death (dead)
	Attempts   int             `json:"attempts"`
	EnqueuedAt time.Time       `json:"enqueued_at"`
	LastError  string          `json:"last_error,omitempty"`
	Payload    json.RawMessage `json:"payload"`
}

func taskView(in queue.Info) TaskView {
	payload := json.RawMessage(in.Payload)
	if !json.Valid(payload) {
		payload, _ = json.Marshal(string(in.Payload))
	}
	return TaskView{ID: in.ID, Type: in.Type, State: string(in.State), At: in.At.UTC(), Attempts: in.Attempts,
		EnqueuedAt: in.EnqueuedAt.UTC(), LastError: in.LastError, Payload: payload}
}

// QueueReport is the state of one SKU's queue.
type QueueReport struct {
	SKU uint64 `json:"sku_id"`
	// Due and Delayed are the tasks of orders waiting for the drain: due
	// now, or after a failed attempt's back-off.
	Due     int64 `json:"due"`
	Delayed int64 `json:"delayed"`
	// Deadlines are the payment-deadline timers still to run. A timer is
	// not removed when its orders are paid or cancelled first: it does
	// nothing when it comes due.
	Deadlines int64      `json:"deadlines"`
	InFlight  int64      `json:"in_flight"`
	Dead      int64      `json:"dead"`
	OldestDue *time.Time `json:"oldest_due"` // of the orders waiting
	Next      []TaskView `json:"next"`       // the first pending tasks by due time
	// Buckets are the depths of each bucket's queue, for a SKU whose
	// stock is split: one bucket's drain falling behind shows here.
	Buckets []BucketQueue `json:"buckets,omitempty"`
}

// BucketQueue is the depth of one bucket's queue.
type BucketQueue struct {
	Bucket   int   `json:"bucket"`
	Due      int64 `json:"due"`
	Delayed  int64 `json:"delayed"`
	InFlight int64 `json:"in_flight"`
	Dead     int64 `json:"dead"`
}

// Queue reports the depths of sku's queue (of all its buckets' queues
// together) and its first n pending tasks.
func (s *Service) Queue(ctx context.Context, sku uint64, n int) (*QueueReport, error) {
	k, err := s.skus.Get(ctx, sku)
	if err != nil {
		return nil, err
	}
	n = min(max(n, 0), queue.MaxList)
	r := &QueueReport{SKU: sku, Next: []TaskView{}}
	var next []queue.Info
	parts := k.Layout().Parts()
	for _, p := range parts {
		q := s.store.Lookup(p)
		st, deadlines, err := q.StatsApart(ctx, order.TaskExpire)
		if err != nil {
			return nil, err
		}
		r.Due, r.Delayed, r.InFlight, r.Dead = r.Due+st.Due, r.Delayed+st.Delayed, r.InFlight+st.InFlight, r.Dead+st.Dead
		if len(parts) > 1 {
			r.Buckets = append(r.Buckets, BucketQueue{Bucket: p.Bucket, Due: st.Due, Delayed: st.Delayed, InFlight: st.InFlight, Dead: st.Dead})
		}
		r.Deadlines += deadlines
		if t := st.OldestDue.UTC(); !st.OldestDue.IsZero() && (r.OldestDue == nil || t.Before(*r.OldestDue)) {
			r.OldestDue = &t
		}
		peek, err := q.Peek(ctx, n)
		if err != nil {
			return nil, err
		}
		next = append(next, peek...)
	}
	slices.SortStableFunc(next, func(a, b queue.Info) int { return a.At.Compare(b.At) })
	for _, in := range next[:min(n, len(next))] {
		r.Next = append(r.Next, taskView(in))
	}
	return r, nil
}

// DeadLetters lists sku's dead letters (bucket after bucket) from offset,
// at most n.
func (s *Service) DeadLetters(ctx context.Context, sku uint64, offset, n int) ([]TaskView, error) {
	k, err := s.skus.Get(ctx, sku)
	if err != nil {
		return nil, err
	}
	offset, n = max(offset, 0), min(max(n, 0), queue.MaxList)
	out := make([]TaskView, 0, n)
	for _, p := range k.Layout().Parts() {
		if len(out) >= n {
			break
		}
		q := s.store.Lookup(p)
		if offset > 0 {
			// A bucket wholly before offset is skipped by its count; the
			// page starts in the first one that has more.
			st, err := q.Stats(ctx)
			if err != nil {
				return nil, err
			}
			if int(st.Dead) <= offset {
				offset -= int(st.Dead)
				continue
			}
		}
		more, err := q.ListDead(ctx, offset, n-len(out))
		if err != nil {
			return nil, err
		}
		offset = 0
		for _, in := range more {
			out = append(out, taskView(in))
		}
	}
	return out, nil
}

// partOfTask is the part of a SKU laid out as l whose queue holds task id:
// an order task's id is its batch id, which names the bucket
// ("<sku>.<bucket>-…"), and a payment deadline's names its first order
// after a prefix. A SKU of a drop has one part.
func partOfTask(l stock.Layout, id string) stock.Part {
	if l.Drop > 0 {
		return l.Parts()[0]
	}
	if i := strings.LastIndexByte(id, ':'); i >= 0 {
		id = id[i+1:]
	}
	if j := strings.IndexByte(id, '-'); j > 0 {
		if got, b, ok := orderid.ParseHead(id[:j]); ok && got == l.SKU && b < l.Buckets {
			return stock.Part{SKU: l.SKU, Bucket: b}
		}
	}
	return stock.Part{SKU: l.SKU}
}

// RequeueDead puts a dead letter back in work with fresh attempts.
func (s *Service) RequeueDead(ctx context.Context, sku uint64, id string) error {
	l := stock.Layout{SKU: sku, Buckets: 1}
	if k, err := s.skus.Get(ctx, sku); err == nil {
		l = k.Layout()
	}
	err := s.store.Lookup(partOfTask(l, id)).RequeueDead(ctx, id)
	if errors.Is(err, queue.ErrNotFound) {
		return fmt.Errorf("%w: no dead letter %q", ErrTaskNotFound, id)
	}
	return err
}

// DeleteDead drops a dead letter for good. An accepted order of the letter
// that is not in SQL is recorded there as failed, after the letter is gone
// (a requeue racing the delete wins or loses as a whole), and then its
// units go back on sale, once: its shopper sees it failed, and a worker
// whose lease ran out that writes it late finds it written and counts
// nothing. An order that is in SQL keeps its units, one a late worker is
// still writing included: the failed row waits for the worker's
// transaction and is refused if it commits. It runs under the SKU's admin
// lock, as stock changes and rebuilds do: a rebuild between the delete and
// the return would count the units as free and the return would add them
// again.
func (s *Service) DeleteDead(ctx context.Context, sku uint64, id string) error {
	k, err := s.skus.Get(ctx, sku)
	if err != nil {
		return err
	}
	return s.exclusive(ctx, sku, func(ctx context.Context) error {
		return s.deleteDead(ctx, sku, partOfTask(k.Layout(), id), id)
	})
}

// deleteDead is DeleteDead under the SKU's admin lock.
func (s *Service) deleteDead(ctx context.Context, sku uint64, p stock.Part, id string) error {
	q := s.store.Lookup(p)
	in, err := q.Inspect(ctx, id)
	if errors.Is(err, queue.ErrNotFound) || err == nil && in.State != queue.StateDead {
		return fmt.Errorf("%w: no dead letter %q", ErrTaskNotFound, id)
	}
	if err != nil {
		return err
	}
	var orders []stock.OrderTask
	var unreadable error
	var inSQL map[string]bool
	if in.Type == stock.TaskCreate {
		if orders, unreadable = stock.DecodeOrders(in.Payload); len(orders) == 0 && unreadable != nil {
			return unreadable
		}
		// Read before the delete, so a store that is down changes nothing.
		if inSQL, err = s.written(ctx, orders); err != nil {
			return err
		}
	}
	if _, err := q.DeleteDead(ctx, id); err != nil {
		if errors.Is(err, queue.ErrNotFound) {
			return fmt.Errorf("%w: no dead letter %q", ErrTaskNotFound, id)
		}
		return err
	}
	if len(orders) == 0 {
		return nil
	}
	// Record each order not in SQL as failed before its units go back:
	// a worker whose lease ran out may be writing it late, and only a
	// row SQL took makes the drop final.
	now := s.o.Now().UTC()
	var dropped []stock.OrderTask
	var unrecorded error
	for _, t := range orders {
		if !inSQL[t.OrderID] {
			ok, err := s.o.Orders.InsertDropped(ctx, order.FromTask(t, s.o.PaymentTimeout, now), now)
			if err != nil {
				unrecorded = err
				break
			}
			if ok {
				dropped = append(dropped, t)
				continue
			}
		}
		s.o.Log.Warn("dead letter dropped by an operator; its order is in sql and keeps its units",
			"order_id", t.OrderID, "sku", t.SKU)
	}
	var stranded error
	for _, t := range dropped {
		if _, err := s.store.ReturnWhenFree(ctx, p, t.OrderID, t.User, t.Qty, stock.ReturnVoid); err != nil {
			stranded = err
			break
		}
		s.o.Log.Warn("dead-lettered order dropped by an operator; recorded as failed, its units are back on sale",
			"order_id", t.OrderID, "sku", t.SKU, "qty", t.Qty)
	}
	if unrecorded != nil {
		// An order SQL neither took as failed nor has may yet be written
		// by a late worker: a rebuild now would count its units as free.
		// They stay taken until an operator reconciles the SKU.
		s.o.Log.Error("dead letter dropped with orders not recorded as failed; their units stay taken until the sku is reconciled",
			"sku", sku, "err", unrecorded.Error(), "return", fmt.Sprint(stranded), "unreadable", fmt.Sprint(unreadable))
		return fmt.Errorf("sale: dead letter %q dropped, its orders not all recorded as failed (reconcile sku %d): %w",
			id, sku, errors.Join(unrecorded, stranded))
	}
	if unreadable == nil && stranded == nil {
		return nil
	}
	// Orders of the letter that could not be read, or whose units could
	// not be given back (the letter is gone already), hold units no order
	// names now: the state rebuilt from SQL and the queues frees them
	// (SQL has the dropped ones as failed).
	s.o.Log.Warn("dead letter dropped with units not given back; rebuilding the sku's redis state",
		"sku", sku, "unreadable", fmt.Sprint(unreadable), "return", fmt.Sprint(stranded))
	if _, err := s.reconcile(ctx, sku); err != nil {
		return errors.Join(stranded, err)
	}
	return nil
}

// written reports which of the orders are in SQL.
func (s *Service) written(ctx context.Context, orders []stock.OrderTask) (map[string]bool, error) {
	ids := make([]string, len(orders))
	for i, t := range orders {
		ids[i] = t.OrderID
	}
	return order.ExistingIDs(s.db.WithContext(ctx), ids)
}
