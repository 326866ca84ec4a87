package sale

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/order"
	"github.com/seckill/seckill/internal/orderid"
	"github.com/seckill/seckill/internal/room"
	"github.com/seckill/seckill/internal/stock"
)

// Report is the invariant check of one SKU.
type Report struct {
	SKU uint64 `json:"sku_id"`
	// Stock is the units put on sale (SQL's stock_total).
	Stock int64 `json:"stock"`
	// StockTotal is Stock under its old name, still sent for one release;
	// read Stock.
	StockTotal     int64  `json:"stock_total"`
	Sold           int64  `json:"sold"`
	RedisLeft      *int64 `json:"redis_left"` // null when Redis has no state for the SKU
	Queued         int64  `json:"queued"`     // units accepted, not yet in SQL
	QueuedOrders   int64  `json:"queued_orders"`
	Orders         int64  `json:"orders"` // rows in SQL
	PendingPayment int64  `json:"pending_payment"`
	Paid           int64  `json:"paid"`
	Cancelled      int64  `json:"cancelled"`
	Expired        int64  `json:"expired"`
	Failed         int64  `json:"failed"`
	ActiveUnits    int64  `json:"active_units"` // units of pending_payment and paid orders
	DeadLetters    int64  `json:"dead_letters"`
	Duplicates     int64  `json:"duplicates"`
	OverLimitUsers int64  `json:"over_limit_users"`
	// InFlight is the units lent by one bucket to another and not received
	// (a move that failed between its two steps): on sale nowhere until a
	// reconcile.
	InFlight   int64    `json:"in_flight"`
	Consistent bool     `json:"consistent"`
	Violations []string `json:"violations"`
	// Buckets reports each bucket of a SKU whose stock is split.
	Buckets []BucketReport `json:"buckets,omitempty"`
	// WaitingRoom reports the SKU's waiting room, if it has one: every
	// buyer it can check was admitted.
	WaitingRoom *room.Report `json:"waiting_room,omitempty"`
}

// BucketReport is the check of one bucket of a split SKU: the units its
// shoppers took in Redis equal its queued orders' and its active orders'
// in SQL.
type BucketReport struct {
	Bucket      int    `json:"bucket"`
	RedisLeft   *int64 `json:"redis_left"` // null when Redis has no state for the bucket
	RedisTaken  int64  `json:"redis_taken"`
	Queued      int64  `json:"queued"`
	ActiveUnits int64  `json:"active_units"`
	Consistent  bool   `json:"consistent"`
}

// Audit checks one SKU's invariants: sold <= stock, sold equals the units
// of active orders, no order twice, no shopper over the limit (counting
// their cancelled and expired orders when the SKU's limit does), no
// accepted order dead-lettered, and redis_left + queued + active == stock.
// The figures are read from Redis and SQL one after the other, so they are
// exact when the SKU is at rest; while orders move, a disagreement is read
// again a few times before it is reported.
func (s *Service) Audit(ctx context.Context, id uint64) (*Report, error) {
	var r *Report
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		if r, err = s.audit(ctx, id); err != nil || r.Consistent {
			return r, err
		}
		select {
		case <-ctx.Done():
			return r, nil
		case <-time.After(200 * time.Millisecond):
		}
	}
	return r, nil
}

func (s *Service) audit(ctx context.Context, id uint64) (*Report, error) {
	known, err := s.skus.Get(ctx, id)
	if err != nil {
		return nil, err // catalog.ErrNotFound before any Redis read
	}
	r := &Report{SKU: id, Violations: []string{}}
	parts := known.Layout().Parts()
	sts, oks, err := s.store.States(ctx, parts)
	if err != nil {
		return nil, err
	}
	all := true
	var left, moved int64
	for i := range parts {
		all = all && oks[i]
		left += sts[i].Left
		moved += sts[i].Moved
	}
	if all {
		r.RedisLeft = &left
		r.InFlight = -moved
	}
	var queued []stock.OrderTask
	for _, p := range parts {
		q, dead, err := s.store.QueuedOrders(ctx, p)
		if err != nil {
			return nil, err
		}
		queued = append(queued, q...)
		r.DeadLetters += dead
	}
	// Read SQL after the queue: an order drained in between shows in SQL
	// and is dropped from the queued ones below, never counted twice.
	sku, err := s.skus.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	r.Stock, r.StockTotal, r.Sold = sku.StockTotal, sku.StockTotal, sku.Sold
	db := s.db.WithContext(ctx)
	var rows []struct {
		Status string
		N      int64
		Units  int64
	}
	if err := db.Model(&order.Order{}).Select("status, COUNT(*) AS n, COALESCE(SUM(qty), 0) AS units").
		Where("sku_id = ?", id).Group("status").Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("sale: audit: %w", err)
	}
	for _, row := range rows {
		r.Orders += row.N
		switch row.Status {
		case order.StatusPendingPayment:
			r.PendingPayment, r.ActiveUnits = row.N, r.ActiveUnits+row.Units
		case order.StatusPaid:
			r.Paid, r.ActiveUnits = row.N, r.ActiveUnits+row.Units
		case order.StatusCancelled:
			r.Cancelled = row.N
		case order.StatusExpired:
			r.Expired = row.N
		case order.StatusFailed:
			r.Failed = row.N
		}
	}
	if err := db.Raw(`SELECT COUNT(*) FROM (SELECT order_id FROM orders WHERE sku_id = ? GROUP BY order_id HAVING COUNT(*) > 1) d`, id).
		Scan(&r.Duplicates).Error; err != nil {
		return nil, fmt.Errorf("sale: audit: %w", err)
	}
	if err := db.Raw(`SELECT COUNT(*) FROM (SELECT user_id FROM orders WHERE sku_id = ? AND status IN ? GROUP BY user_id HAVING SUM(qty) > ?) u`,
		id, limitStatuses(sku), sku.PerUserLimit).Scan(&r.OverLimitUsers).Error; err != nil {
		return nil, fmt.Errorf("sale: audit: %w", err)
	}
	queuedIn := make([]int64, len(parts))
	if len(queued) > 0 {
		inSQL, err := existing(s.db.WithContext(ctx), queued)
		if err != nil {
			return nil, err
		}
		for _, t := range queued {
			if !inSQL[t.OrderID] {
				r.Queued += int64(t.Qty)
				r.QueuedOrders++
				if b := stock.PartOf(id, t.OrderID).Bucket; b < len(parts) {
					queuedIn[b] += int64(t.Qty)
				}
			}
		}
	}
	if len(parts) > 1 {
		if r.Buckets, err = s.auditBuckets(ctx, id, sts, oks, queuedIn); err != nil {
			return nil, err
		}
	}

	if (sku.Room.On() || sku.Drop != 0) && s.o.Rooms != nil {
		if r.WaitingRoom, err = s.auditRoom(ctx, sku, queued); err != nil {
			return nil, err
		}
	}

	fail := func(format string, args ...any) { r.Violations = append(r.Violations, fmt.Sprintf(format, args...)) }
	if w := r.WaitingRoom; w != nil && w.NotAdmitted > 0 {
		fail("%d shoppers bought without being admitted by the waiting room, e.g. %v", w.NotAdmitted, w.Sample)
	}
	if r.Sold > r.Stock {
		fail("oversold: sold %d > stock %d", r.Sold, r.Stock)
	}
	if r.Sold != r.ActiveUnits {
		fail("sold %d != units of pending_payment and paid orders %d", r.Sold, r.ActiveUnits)
	}
	if r.Duplicates > 0 {
		fail("%d order ids written more than once", r.Duplicates)
	}
	if r.OverLimitUsers > 0 {
		fail("%d shoppers over the per-user limit of %d", r.OverLimitUsers, sku.PerUserLimit)
	}
	if r.DeadLetters > 0 {
		fail("%d accepted orders dead-lettered: inspect and requeue them", r.DeadLetters)
	}
	// A finished sale's Redis state expires after StateRetention.
	expired := r.RedisLeft == nil && r.QueuedOrders == 0 && !s.o.Now().Before(s.stateExpiry(sku))
	switch {
	case r.RedisLeft == nil && !expired:
		fail("redis has no state for the sku: reconcile it")
	case r.RedisLeft != nil:
		if got := *r.RedisLeft + r.InFlight + r.Queued + r.ActiveUnits; got != r.Stock {
			fail("redis_left %d + in_flight %d + queued %d + active %d = %d != stock %d",
				*r.RedisLeft, r.InFlight, r.Queued, r.ActiveUnits, got, r.Stock)
		}
	}
	if r.InFlight != 0 {
		fail("%d units moving between buckets were not received: reconcile the sku", r.InFlight)
	}
	for _, b := range r.Buckets {
		if !b.Consistent && b.RedisLeft != nil {
			fail("bucket %d: redis_taken %d != queued %d + active %d", b.Bucket, b.RedisTaken, b.Queued, b.ActiveUnits)
		}
	}
	r.Consistent = len(r.Violations) == 0
	return r, nil
}

// auditRoom checks the waiting room that gates sku (its own, or its
// drop's) against sku's buyers: the shoppers of its orders in SQL and of
// queued.
func (s *Service) auditRoom(ctx context.Context, sku *catalog.SKU, queued []stock.OrderTask) (*room.Report, error) {
	last, err := order.LastOrders(s.db.WithContext(ctx), sku.ID)
	if err != nil {
		return nil, fmt.Errorf("sale: audit: %w", err)
	}
	buyers := make([]room.Buyer, 0, len(last)+len(queued))
	for user, at := range last {
		buyers = append(buyers, room.Buyer{User: user, Last: at})
	}
	for _, t := range queued {
		buyers = append(buyers, room.Buyer{User: t.User, Last: time.UnixMilli(t.CreatedMS)})
	}
	gate := sku
	if sku.RoomID() != sku.ID {
		if gate, err = s.skus.Get(ctx, sku.RoomID()); err != nil {
			return nil, fmt.Errorf("sale: audit: %w", err)
		}
	}
	return s.o.Rooms.Audit(ctx, gate, buyers)
}

// auditBuckets checks each bucket of a split SKU: the units taken in its
// Redis state against its queued orders (queued, by bucket) and its active
// orders in SQL (an order id names its bucket).
func (s *Service) auditBuckets(ctx context.Context, id uint64, sts []stock.State, oks []bool, queued []int64) ([]BucketReport, error) {
	var rows []struct {
		Head  string
		Units int64
	}
	if err := s.db.WithContext(ctx).Model(&order.Order{}).
		Select("SUBSTR(order_id, 1, INSTR(order_id, '-') - 1) AS head, COALESCE(SUM(qty), 0) AS units").
		Where("sku_id = ? AND status IN ?", id, []string{order.StatusPendingPayment, order.StatusPaid}).
		Group("head").Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("sale: audit buckets: %w", err)
	}
	active := make([]int64, len(sts))
	for _, row := range rows {
		if sku, b, ok := orderid.ParseHead(row.Head); ok && sku == id && b < len(sts) {
			active[b] += row.Units
		}
	}
	out := make([]BucketReport, len(sts))
	for i, st := range sts {
		b := BucketReport{Bucket: i, Queued: queued[i], ActiveUnits: active[i]}
		if oks[i] {
			l := st.Left
			b.RedisLeft, b.RedisTaken = &l, st.Taken()
			b.Consistent = b.RedisTaken == b.Queued+b.ActiveUnits
		}
		out[i] = b
	}
	return out, nil
}

// existing returns which of the tasks' orders are in SQL.
func existing(db *gorm.DB, tasks []stock.OrderTask) (map[string]bool, error) {
	ids := make([]string, len(tasks))
	for i, t := range tasks {
		ids[i] = t.OrderID
	}
	return order.ExistingIDs(db, ids)
}
