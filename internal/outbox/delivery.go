package outbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Delivery is a row of outbox_deliveries: how the delivery of one event to
// one receiver goes.
type Delivery struct {
	ID          uint64     `gorm:"column:id;primaryKey;autoIncrement"`
	EventRow    uint64     `gorm:"column:event_row"` // the event's outbox id
	Receiver    string     `gorm:"column:receiver"`
	OrderID     string     `gorm:"column:order_id"`
	Status      string     `gorm:"column:status"`
	Attempts    int        `gorm:"column:attempts"`
	WindowFrom  time.Time  `gorm:"column:window_from"`
	NextAt      time.Time  `gorm:"column:next_at"`
	LeaseOwner  *string    `gorm:"column:lease_owner"`
	LeaseUntil  *time.Time `gorm:"column:lease_until"`
	DeliveredAt *time.Time `gorm:"column:delivered_at"`
	LastError   *string    `gorm:"column:last_error"`
}

// TableName is outbox_deliveries.
func (Delivery) TableName() string { return "outbox_deliveries" }

// registration is a row of outbox_receivers: a receiver some dispatcher has,
// and how far its deliveries have been made.
type registration struct {
	Name      string    `gorm:"column:name;primaryKey"`
	NextID    uint64    `gorm:"column:next_id"` // events from this outbox id have no delivery to it yet
	CreatedAt time.Time `gorm:"column:created_at"`
	SeenAt    time.Time `gorm:"column:seen_at"`
}

func (registration) TableName() string { return "outbox_receivers" }

// everyReceiver names the deliveries that were every receiver's before
// delivery state was kept per receiver (migration 00013): a receiver
// registered while they are kept gets a copy of them. No configured
// receiver can have the name; its registration only says they are kept.
const everyReceiver = "*"

// fanOutBatch is how many deliveries one fan-out writes at most.
const fanOutBatch = 2000

// register records receiver name, if no dispatcher has yet, at now: its
// deliveries begin with the events after the outbox's last one (a
// dispatcher registers its receivers before it first moves batches into
// the outbox, so those are the events written from then on, and the ones
// still in batches), and, while the deliveries of everyReceiver are kept,
// with a copy of them.
func register(ctx context.Context, db *gorm.DB, name string, now time.Time) error {
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var last struct{ N uint64 }
		if err := tx.Model(&Event{}).Select("COALESCE(MAX(id), 0) AS n").Scan(&last).Error; err != nil {
			return err
		}
		r := registration{Name: name, NextID: last.N + 1, CreatedAt: now, SeenAt: now}
		res := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&r)
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error // registered before, by this or another dispatcher
		}
		return tx.Exec(`INSERT INTO outbox_deliveries (event_row, receiver, order_id, status, attempts, window_from, next_at, last_error)
			SELECT event_row, ?, order_id, status, attempts, window_from, next_at, last_error
			FROM outbox_deliveries WHERE receiver = ? AND status IN ? ORDER BY id`,
			name, everyReceiver, []string{StatusPending, StatusDead}).Error
	})
	if err != nil {
		return fmt.Errorf("outbox: register receiver %s: %w", name, err)
	}
	return nil
}

// errUnregistered is a fan-out to a receiver no dispatcher has registered,
// or one forgotten since.
var errUnregistered = errors.New("receiver not registered")

// fanOut adds a pending delivery to receiver name of each event past its
// cursor, up to fanOutBatch, in id order, and moves the cursor past them;
// it returns how many it added. Fan-outs of one receiver take turns (the
// receiver's row is locked), and the outbox's ids become visible in order
// (expand), so no event is passed over. errUnregistered when the receiver
// has no row.
func fanOut(ctx context.Context, db *gorm.DB, name string) (int, error) {
	// Most rounds find nothing new: they say so without a lock.
	var at []struct {
		NextID uint64
		Last   *uint64
	}
	err := db.WithContext(ctx).Raw(`SELECT next_id, (SELECT MAX(id) FROM outbox) AS last FROM outbox_receivers WHERE name = ?`, name).
		Scan(&at).Error
	switch {
	case err != nil:
		return 0, fmt.Errorf("outbox: fan out to %s: %w", name, err)
	case len(at) == 0:
		return 0, errUnregistered
	case at[0].Last == nil || *at[0].Last < at[0].NextID:
		return 0, nil
	}
	n := 0
	err = db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var r registration
		err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Take(&r, "name = ?", name).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return errUnregistered
		}
		if err != nil {
			return err
		}
		var events []Event
		if err := tx.Select("id", "order_id", "created_at").Where("id >= ?", r.NextID).Order("id").Limit(fanOutBatch).
			Find(&events).Error; err != nil || len(events) == 0 {
			return err
		}
		rows := make([]Delivery, len(events))
		for i, e := range events {
			at := e.CreatedAt.UTC()
			rows[i] = Delivery{EventRow: e.ID, Receiver: name, OrderID: e.OrderID, Status: StatusPending, WindowFrom: at, NextAt: at}
		}
		// A redelivery by hand may have made one already.
		if err := tx.Clauses(clause.OnConflict{DoNothing: true}).CreateInBatches(&rows, 500).Error; err != nil {
			return err
		}
		n = len(rows)
		return tx.Model(&registration{}).Where("name = ?", name).Update("next_id", events[len(events)-1].ID+1).Error
	})
	if err != nil {
		if errors.Is(err, errUnregistered) {
			return 0, err
		}
		return 0, fmt.Errorf("outbox: fan out to %s: %w", name, err)
	}
	return n, nil
}

// byOrder names, in db's dialect, the index claim's test of an earlier
// pending delivery of the same order is read from. Left to itself, the
// planner may read every pending delivery of the receiver for each one
// it looks at (once its statistics see few orders per receiver): a claim
// then takes seconds behind a backlog of thousands.
func byOrder(db *gorm.DB) string {
	if db.Dialector.Name() == "sqlite" {
		return "INDEXED BY outbox_deliveries_order"
	}
	return "FORCE INDEX (outbox_deliveries_order)"
}

// claim leases up to limit due deliveries to receiver name under a new
// owner token for lease, and returns them with their events. A delivery is
// due when it is pending, its next try has come, no lease holds it, and no
// pending delivery of its order to the same receiver is of an event written
// before it (each receiver gets one order's events in order).
func claim(ctx context.Context, db *gorm.DB, name string, limit int, now time.Time, lease time.Duration) ([]Delivery, map[uint64]*Event, string, error) {
	db = db.WithContext(ctx)
	var ids []uint64
	err := db.Raw(`SELECT d.id FROM outbox_deliveries d
		WHERE d.receiver = ? AND d.status = ? AND d.next_at <= ? AND (d.lease_until IS NULL OR d.lease_until < ?)
		AND NOT EXISTS (SELECT 1 FROM outbox_deliveries p `+byOrder(db)+`
			WHERE p.receiver = d.receiver AND p.order_id = d.order_id AND p.status = ? AND p.event_row < d.event_row)
		ORDER BY d.next_at, d.id LIMIT ?`, name, StatusPending, now, now, StatusPending, limit).Scan(&ids).Error
	if err != nil || len(ids) == 0 {
		return nil, nil, "", err
	}
	owner := token()
	res := db.Model(&Delivery{}).
		Where("id IN ? AND status = ? AND (lease_until IS NULL OR lease_until < ?)", ids, StatusPending, now).
		Updates(map[string]any{"lease_owner": owner, "lease_until": now.Add(lease)})
	if res.Error != nil || res.RowsAffected == 0 {
		return nil, nil, "", res.Error
	}
	var ds []Delivery
	if err := db.Where("id IN ? AND lease_owner = ?", ids, owner).Order("id").Find(&ds).Error; err != nil {
		return nil, nil, "", err
	}
	rows := make([]uint64, len(ds))
	for i := range ds {
		rows[i] = ds[i].EventRow
	}
	var events []Event
	if err := db.Where("id IN ?", rows).Find(&events).Error; err != nil {
		return nil, nil, "", err
	}
	byRow := make(map[uint64]*Event, len(events))
	for i := range events {
		byRow[events[i].ID] = &events[i]
	}
	return ds, byRow, owner, nil
}
