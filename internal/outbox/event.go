// Package outbox hands every order's lifecycle to the shop: each event is
// written to the outbox in the transaction of the order's change that
// causes it (Append), and a Dispatcher delivers it from there to each
// configured receiver (a Sink) on its own.
//
// The guarantees: no event exists without its change and no change without
// its event (one transaction); each receiver gets each event written since
// it was first configured at least once, by one dispatcher at a time
// whatever the number of instances (a lease on its delivery), with the same
// id on every delivery; each receiver gets the events of one order in the
// order they were written (a delivery waits for the pending deliveries of
// its order to the same receiver before it). Delivery state is kept per
// event and receiver, so a receiver that refuses or is away holds back its
// own deliveries only. A delivery a receiver refuses past Options.MaxAge is
// a dead letter: kept, counted and listed until redelivered by hand.
package outbox

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// Event types.
const (
	OrderCreated     = "order.created"
	OrderPaid        = "order.paid"
	OrderCancelled   = "order.cancelled"
	OrderExpired     = "order.expired"
	OrderFailed      = "order.failed"
	PaymentRefundDue = "payment.refund_due"
)

// Types are the event types, in the order of an order's lifecycle.
var Types = []string{OrderCreated, OrderPaid, OrderCancelled, OrderExpired, OrderFailed, PaymentRefundDue}

// Statuses of a delivery.
const (
	StatusPending   = "pending"
	StatusDelivered = "delivered"
	StatusDead      = "dead"
)

// Event is a row of table outbox: an event, as every receiver gets it.
type Event struct {
	ID        uint64    `gorm:"column:id;primaryKey;autoIncrement"`
	EventID   string    `gorm:"column:event_id"`
	Type      string    `gorm:"column:type"`
	OrderID   string    `gorm:"column:order_id"`
	Payload   string    `gorm:"column:payload"`
	CreatedAt time.Time `gorm:"column:created_at"`
}

// TableName is outbox.
func (Event) TableName() string { return "outbox" }

// Message is an event as a sink delivers it (the payload).
type Message struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	Timestamp time.Time       `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

// OrderData is the data of an event: the order as the admin API shows it
// (GET /admin/orders/{id}) after the change, and for payment.refund_due the
// payment that is owed back.
type OrderData struct {
	Order   any `json:"order"`
	Payment any `json:"payment,omitempty"`
}

// New returns the event of type typ for orderID at at, carrying data, to
// Append. Its id is the same whoever builds it: an order event's is made of
// the type and the order id (an order is created, paid, cancelled, expired
// or failed at most once), a refund's of the payment id (key).
func New(typ, orderID, key string, at time.Time, data OrderData) (Event, error) {
	id := fmt.Sprintf("evt_%s_%s", typ[len("order."):], orderID)
	if typ == PaymentRefundDue {
		sum := sha256.Sum256([]byte(key))
		id = "evt_refund_" + hex.EncodeToString(sum[:12])
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return Event{}, fmt.Errorf("outbox: encode %s: %w", typ, err)
	}
	at = at.UTC().Truncate(time.Millisecond)
	return Event{EventID: id, Type: typ, OrderID: orderID, Payload: string(message(id, typ, at, raw)), CreatedAt: at}, nil
}

// message is the JSON of Message{id, typ, at, data}, as json.Marshal writes
// it, without checking and copying data again (the drain writes hundreds of
// events a batch).
func message(id, typ string, at time.Time, data []byte) []byte {
	b := make([]byte, 0, len(data)+128)
	b = append(b, `{"id":`...)
	b = appendJSON(b, id)
	b = append(b, `,"type":`...)
	b = appendJSON(b, typ)
	b = append(b, `,"timestamp":`...)
	b = appendJSON(b, at)
	b = append(b, `,"data":`...)
	b = append(b, data...)
	return append(b, '}')
}

// appendJSON appends the JSON of v, a string or a time, as json.Marshal
// writes it.
func appendJSON(b []byte, v any) []byte {
	if t, ok := v.(time.Time); ok && t.Location() == time.UTC {
		b = append(b, '"')
		b = t.AppendFormat(b, time.RFC3339Nano)
		return append(b, '"')
	}
	j, _ := json.Marshal(v)
	return append(b, j...)
}

// Writer writes events in the caller's transactions. A nil *Writer writes
// nothing: events are off.
type Writer struct{}

// NewWriter returns a Writer when on, nil otherwise.
func NewWriter(on bool) *Writer {
	if !on {
		return nil
	}
	return &Writer{}
}

// On reports whether w writes events.
func (w *Writer) On() bool { return w != nil }

// Append writes events in tx, the transaction of the change that causes
// them, as one row however many they are (a dispatcher makes one outbox
// row of each later, in order). They go with tx's commit or rollback.
func (w *Writer) Append(tx *gorm.DB, events ...Event) error {
	return w.AppendPacked(tx, w.Pack(events...))
}

// Packed is events packed into one row by Pack, to append later: a caller
// may pack while its transaction waits on SQL.
type Packed struct {
	b *batch
}

// Pack packs events for AppendPacked; safe for concurrent use.
func (w *Writer) Pack(events ...Event) Packed {
	if w == nil || len(events) == 0 {
		return Packed{}
	}
	b := newBatch(events)
	return Packed{b: &b}
}

// AppendPacked writes p in tx, as Append does.
func (w *Writer) AppendPacked(tx *gorm.DB, p Packed) error {
	if w == nil || p.b == nil {
		return nil
	}
	if err := tx.Create(p.b).Error; err != nil {
		return fmt.Errorf("outbox: write %d event(s): %w", p.b.N, err)
	}
	return nil
}
