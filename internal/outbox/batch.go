package outbox

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/klauspost/compress/zstd"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/seckill/seckill/internal/storeerr"
)

// batch is a row of outbox_batches: the events one transaction appended,
// kept as one row so that a change of many orders (the drain's insert of a
// batch) pays for one row, not one per event. A dispatcher moves them into
// outbox rows (expand), where each is delivered on its own.
type batch struct {
	ID        uint64    `gorm:"column:id;primaryKey;autoIncrement"`
	N         int       `gorm:"column:n"`
	CreatedAt time.Time `gorm:"column:created_at"`
	Events    []byte    `gorm:"column:events"` // zstd of the JSON array of queued
}

func (batch) TableName() string { return "outbox_batches" }

// queued is an event of a batch as it is kept in the batch's JSON array.
type queued struct {
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Order   string          `json:"order"`
	At      time.Time       `json:"at"`
	Payload json.RawMessage `json:"payload"`
}

// The events of a batch are compressed: the drain's batch of 500 orders
// makes about 230 KB of JSON, much of it alike, and MySQL's cost of a row
// grows with its bytes. Both are safe for concurrent use.
var (
	zstdEncoder, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	zstdDecoder, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0))
)

// newBatch packs events into one row: the JSON array of queued, written
// without checking each payload again.
func newBatch(events []Event) batch {
	oldest := events[0].CreatedAt
	size := 2
	for _, e := range events {
		size += len(e.Payload) + len(e.EventID) + len(e.OrderID) + 96
	}
	raw := make([]byte, 0, size)
	raw = append(raw, '[')
	for i, e := range events {
		if i > 0 {
			raw = append(raw, ',')
		}
		raw = append(raw, `{"id":`...)
		raw = appendJSON(raw, e.EventID)
		raw = append(raw, `,"type":`...)
		raw = appendJSON(raw, e.Type)
		raw = append(raw, `,"order":`...)
		raw = appendJSON(raw, e.OrderID)
		raw = append(raw, `,"at":`...)
		raw = appendJSON(raw, e.CreatedAt)
		raw = append(raw, `,"payload":`...)
		raw = append(raw, e.Payload...)
		raw = append(raw, '}')
		if e.CreatedAt.Before(oldest) {
			oldest = e.CreatedAt
		}
	}
	raw = append(raw, ']')
	return batch{N: len(events), CreatedAt: oldest, Events: zstdEncoder.EncodeAll(raw, nil)}
}

// events unpacks b into outbox rows.
func (b *batch) events() ([]Event, error) {
	raw, err := zstdDecoder.DecodeAll(b.Events, nil)
	if err != nil {
		return nil, fmt.Errorf("outbox: decode batch %d: %w", b.ID, err)
	}
	var list []queued
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("outbox: decode batch %d: %w", b.ID, err)
	}
	out := make([]Event, len(list))
	for i, q := range list {
		at := q.At.UTC()
		out[i] = Event{EventID: q.ID, Type: q.Type, OrderID: q.Order, Payload: string(q.Payload), CreatedAt: at}
	}
	return out, nil
}

// One expand moves the oldest batches, at most expandScan of them, as long
// as their events come to at most expandEvents (and at least one batch):
// 10 drain batches of 500 orders make one transaction of 5,000 rows, and
// so do 1,000 expiries or payments, each a batch of one event, where a
// bound on batches alone would take a transaction per ten of them.
const (
	expandEvents = 5000
	expandScan   = 1000
)

// expandLock names, on MySQL, the lock an expand holds: one per database,
// within MySQL's 64 characters.
const expandLock = "CONCAT('seckill.outbox:', LEFT(SHA2(DATABASE(), 256), 48))"

// expand moves the events of the oldest batches (up to expandEvents) into
// outbox rows and deletes the batches, in one transaction, and returns how
// many events it moved; 0 when another dispatcher is expanding.
//
// Expands take turns (a named lock held by the connection, so a process
// that dies lets go of it) and take batches in id order, so outbox ids keep
// the order in which an order's changes were committed: a change of an
// order is made after its earlier change committed, so its batch has the
// larger id, and it is seen by the same or a later expand. Taking turns
// also makes outbox ids visible in id order (an expand commits before the
// next one writes), which a receiver's cursor relies on (fanOut). An event
// id already in the outbox is not written again.
func expand(ctx context.Context, db *gorm.DB) (int, error) {
	db = db.WithContext(ctx)
	if db.Dialector.Name() != "mysql" {
		return move(db) // SQLite: one writer at a time anyway
	}
	moved := 0
	err := db.Connection(func(conn *gorm.DB) error {
		conn = conn.Session(&gorm.Session{}) // each use its own statement
		var got sql.NullInt64
		err := conn.Raw("SELECT GET_LOCK(" + expandLock + ", 0)").Scan(&got).Error
		if storeerr.LockHeld(err) {
			return nil // TiDB's answer for a lock another expand holds
		}
		if err != nil {
			return err
		}
		if !got.Valid || got.Int64 != 1 {
			return nil
		}
		// Released whatever ctx says: a lock left on a pooled connection
		// would stop every expand. A release that fails is a broken
		// connection, whose locks the server drops.
		defer conn.WithContext(context.WithoutCancel(ctx)).Exec("DO RELEASE_LOCK(" + expandLock + ")")
		moved, err = move(conn)
		return err
	})
	return moved, err
}

// move is an expand's transaction.
func move(db *gorm.DB) (int, error) {
	moved := 0
	err := db.Transaction(func(tx *gorm.DB) error {
		var heads []struct {
			ID uint64
			N  int
		}
		if err := tx.Model(&batch{}).Select("id", "n").Order("id").Limit(expandScan).Find(&heads).Error; err != nil || len(heads) == 0 {
			return err
		}
		take := make([]uint64, 0, len(heads))
		for n := 0; len(take) < len(heads) && (len(take) == 0 || n+heads[len(take)].N <= expandEvents); {
			n += heads[len(take)].N
			take = append(take, heads[len(take)].ID)
		}
		var bs []batch
		if err := tx.Where("id IN ?", take).Order("id").Find(&bs).Error; err != nil || len(bs) == 0 {
			return err
		}
		var rows []Event
		ids := make([]uint64, len(bs))
		for i := range bs {
			es, err := bs[i].events()
			if err != nil {
				return err
			}
			rows = append(rows, es...)
			ids[i] = bs[i].ID
		}
		if len(rows) > 0 {
			if err := tx.Clauses(clause.OnConflict{DoNothing: true}).CreateInBatches(&rows, 1000).Error; err != nil {
				return err
			}
		}
		moved = len(rows)
		return tx.Where("id IN ?", ids).Delete(&batch{}).Error
	})
	if err != nil {
		return 0, fmt.Errorf("outbox: expand: %w", err)
	}
	return moved, nil
}

// queuedEvents reads the events still in batches: order ids by event type,
// and the creation of the oldest (zero when none).
func queuedEvents(tx *gorm.DB) (map[string]map[string]bool, time.Time, error) {
	var bs []batch
	if err := tx.Order("id").Find(&bs).Error; err != nil {
		return nil, time.Time{}, fmt.Errorf("outbox: read batches: %w", err)
	}
	byType := map[string]map[string]bool{}
	var oldest time.Time
	for i := range bs {
		es, err := bs[i].events()
		if err != nil {
			return nil, time.Time{}, err
		}
		for _, e := range es {
			if byType[e.Type] == nil {
				byType[e.Type] = map[string]bool{}
			}
			byType[e.Type][e.OrderID] = true
			if oldest.IsZero() || e.CreatedAt.Before(oldest) {
				oldest = e.CreatedAt
			}
		}
	}
	return byType, oldest, nil
}
