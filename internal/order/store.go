package order

import (
	"context"
	"errors"
	"slices"
	"time"

	"gorm.io/gorm"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/outbox"
)

// Store writes the orders table: every change of an order's row is made
// through it, in one transaction with skus.sold and with the order's event
// in the outbox (when events are on), so none of the three is ever written
// without the others.
type Store struct {
	db     *gorm.DB
	events *outbox.Writer
}

// NewStore returns the store of db's orders; events nil writes no events.
func NewStore(db *gorm.DB, events *outbox.Writer) *Store {
	return &Store{db: db, events: events}
}

// ErrGuard is an insert that SQL's stock guard refused: a SKU had too few
// units left for the batch. Nothing was written.
var ErrGuard = errors.New("order: stock guard refused the batch")

// newEvent is the event of type typ about the order in r, as it is after
// the change, at now; a refund's carries its payment p (nil otherwise).
func newEvent(typ string, r *supportRow, p *Payment, now time.Time) (outbox.Event, error) {
	data, key := outbox.OrderData{Order: r.adminView()}, ""
	if p != nil {
		data.Payment, key = p, p.PaymentID
	}
	return outbox.New(typ, r.OrderID, key, now, data)
}

// event appends the event of type typ about the order in r in tx.
func (s *Store) event(tx *gorm.DB, typ string, r *supportRow, now time.Time) error {
	if !s.events.On() {
		return nil
	}
	e, err := newEvent(typ, r, nil, now)
	if err != nil {
		return err
	}
	return s.events.Append(tx, e)
}

// eventOf appends the event of type typ about orderID as tx reads it now;
// p is the payment of a payment.refund_due, nil otherwise.
func (s *Store) eventOf(tx *gorm.DB, typ, orderID string, p *Payment, now time.Time) error {
	if !s.events.On() {
		return nil
	}
	var r supportRow
	if err := tx.Take(&r, "order_id = ?", orderID).Error; err != nil {
		return err
	}
	e, err := newEvent(typ, &r, p, now)
	if err != nil {
		return err
	}
	return s.events.Append(tx, e)
}

// closedEvent is the event type of an order closed with status.
func closedEvent(status string) string {
	if status == StatusExpired {
		return outbox.OrderExpired
	}
	return outbox.OrderCancelled
}

// Insert writes the rows not yet in SQL, counts their units in skus.sold
// and writes their order.created events, all or nothing; ErrGuard when a
// SKU has too few units left. It returns the rows it wrote, and the SKUs of
// rows already written as failed.
//
// A batch is almost always delivered once, so it is first written without
// asking SQL which rows it has. A batch delivered again (written, then not
// acked) fails on order_id's unique key and rolls back; that, or any other
// error, sends it the careful way: the rows SQL has are read first.
func (s *Store) Insert(ctx context.Context, rows []Order, now time.Time) ([]Order, map[uint64]bool, error) {
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		return s.insertCounted(tx, rows, now)
	})
	if err == nil || errors.Is(err, ErrGuard) {
		return rows, nil, err
	}
	var fresh []Order
	var failed map[uint64]bool
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var err error
		fresh, failed, err = notWritten(tx, rows)
		if err != nil || len(fresh) == 0 {
			return err
		}
		return s.insertCounted(tx, fresh, now)
	})
	return fresh, failed, err
}

// insertCounted inserts rows with their events and adds their units to
// their SKUs' sold; ErrGuard when a SKU has too few units left. The rows
// keep no id of an insert that may yet roll back.
func (s *Store) insertCounted(tx *gorm.DB, rows []Order, now time.Time) error {
	// The events are made while SQL inserts the rows.
	var packed chan func() (outbox.Packed, error)
	if s.events.On() {
		packed = make(chan func() (outbox.Packed, error), 1)
		go func() {
			p, err := s.created(rows, now)
			packed <- func() (outbox.Packed, error) { return p, err }
		}()
	}
	batch := slices.Clone(rows)
	err := tx.CreateInBatches(&batch, 1000).Error
	if packed != nil {
		p, perr := (<-packed)()
		if err == nil {
			err = perr
		}
		if err == nil {
			err = s.events.AppendPacked(tx, p)
		}
	}
	if err != nil {
		return err
	}
	units := map[uint64]int64{}
	for _, o := range rows {
		units[o.SKU] += int64(o.Qty)
	}
	for sku, n := range units {
		if ok, err := catalog.AddSold(tx, sku, n, now); err != nil || !ok {
			if err == nil {
				err = ErrGuard
			}
			return err
		}
	}
	return nil
}

// created packs the order.created events of rows, at now.
func (s *Store) created(rows []Order, now time.Time) (outbox.Packed, error) {
	events := make([]outbox.Event, len(rows))
	for i := range rows {
		e, err := newEvent(outbox.OrderCreated, &supportRow{Order: rows[i]}, nil, now)
		if err != nil {
			return outbox.Packed{}, err
		}
		events[i] = e
	}
	return s.events.Pack(events...), nil
}

// InsertOneByOne writes each row in its own guarded transaction, with its
// event; a row the guard refuses is written with status failed (and an
// order.failed event). It returns the rows written live, the number
// refused, and the SKUs with failed rows in this batch (now or from an
// earlier attempt); refused lists the orders refused now.
func (s *Store) InsertOneByOne(ctx context.Context, rows []Order, now time.Time) (fresh, refused []Order, failed map[uint64]bool, err error) {
	failed = map[uint64]bool{}
	for _, o := range rows {
		ok := false
		err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			todo, before, err := notWritten(tx, []Order{o})
			for sku := range before {
				failed[sku] = true
			}
			if err != nil || len(todo) == 0 {
				return err
			}
			if ok, err = catalog.AddSold(tx, o.SKU, int64(o.Qty), now); err != nil {
				return err
			}
			typ := outbox.OrderCreated
			if !ok {
				o.Status = StatusFailed
				o.ClosedAt = &now
				typ = outbox.OrderFailed
			}
			row := o
			if err := tx.Create(&row).Error; err != nil {
				return err
			}
			return s.event(tx, typ, &supportRow{Order: o}, now)
		})
		if err != nil {
			return fresh, refused, failed, err
		}
		if ok {
			fresh = append(fresh, o)
			continue
		}
		if o.Status == StatusFailed {
			refused = append(refused, o)
			failed[o.SKU] = true
		}
	}
	return fresh, refused, failed, nil
}

// InsertDropped writes o, the order of a task an operator dropped (its
// dead letter deleted), as failed, with its order.failed event and
// nothing in sold, so that it can never be written live: a worker whose
// lease ran out that writes it late finds it written and counts nothing
// (Insert's careful way). It reports whether it wrote the row. False with
// no error: SQL has the order, a worker wrote it, and it keeps its units.
// A worker's insert not yet committed holds order_id's unique key: this
// one waits for it, and fails on the key if the worker commits.
func (s *Store) InsertDropped(ctx context.Context, o Order, now time.Time) (bool, error) {
	o.ID = 0
	o.Status, o.ClosedAt, o.UpdatedAt = StatusFailed, &now, now
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		row := o
		if err := tx.Create(&row).Error; err != nil {
			return err
		}
		return s.event(tx, outbox.OrderFailed, &supportRow{Order: o}, now)
	})
	if err == nil {
		return true, nil
	}
	// The unique key, or any other error: SQL says whether it has it.
	have, rerr := ExistingIDs(s.db.WithContext(ctx), []string{o.OrderID})
	if rerr != nil {
		return false, errors.Join(err, rerr)
	}
	if have[o.OrderID] {
		return false, nil
	}
	return false, err
}

// notWritten returns the rows whose order_id is not in SQL yet, and the
// SKUs of those written with status failed.
func notWritten(tx *gorm.DB, rows []Order) ([]Order, map[uint64]bool, error) {
	ids := make([]string, len(rows))
	for i, o := range rows {
		ids[i] = o.OrderID
	}
	var have []struct {
		OrderID string
		SKUID   uint64 `gorm:"column:sku_id"`
		Status  string
	}
	if err := tx.Model(&Order{}).Select("order_id, sku_id, status").Where("order_id IN ?", ids).Scan(&have).Error; err != nil {
		return nil, nil, err
	}
	if len(have) == 0 {
		return rows, nil, nil
	}
	seen := make(map[string]bool, len(have))
	var failed map[uint64]bool
	for _, h := range have {
		seen[h.OrderID] = true
		if h.Status == StatusFailed {
			if failed == nil {
				failed = map[uint64]bool{}
			}
			failed[h.SKUID] = true
		}
	}
	var out []Order
	for _, o := range rows {
		if !seen[o.OrderID] {
			out = append(out, o)
		}
	}
	return out, failed, nil
}
