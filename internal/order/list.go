package order

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/seckill/seckill/internal/orderid"
	"github.com/seckill/seckill/internal/stock"
)

// Cursor is where a page of a shopper's orders continues: with the
// orders created before CreatedMS, or at it with a smaller id.
type Cursor struct {
	CreatedMS int64
	OrderID   string
}

// lastCursorMS is the last millisecond a cursor may name: the end of year
// 9999, the last SQL's DATETIME holds.
const lastCursorMS = 253402300799999

// Valid reports whether c names a place a list can continue from: an order
// id, at a time from 1970 to the end of year 9999. A list given a cursor
// that is not valid refuses it with ErrInvalid.
func (c *Cursor) Valid() bool {
	if c == nil {
		return true
	}
	_, _, _, ok := orderid.Parse(c.OrderID)
	return ok && c.CreatedMS >= 0 && c.CreatedMS <= lastCursorMS
}

// errCursor: a list was given a cursor that is not Valid.
var errCursor = fmt.Errorf("%w: the cursor names no place in a list of orders", ErrInvalid)

// after reports whether v comes after c, newest first.
func (c *Cursor) after(v *View) bool {
	if c == nil {
		return true
	}
	ms := v.CreatedAt.UnixMilli()
	return ms < c.CreatedMS || ms == c.CreatedMS && v.OrderID < c.OrderID
}

// QueuedWindow is how long after a sale's end the shopper's list still looks
// for their orders of it in its queue (the drain writes them to SQL within
// seconds unless MySQL is down).
const QueuedWindow = time.Hour

// ListOrders returns up to limit of user's orders, newest first, after the
// cursor (nil: from the newest), and the cursor of the next page (nil after
// the last). Orders still queued are shown with status queued, the others
// come from SQL. Another shopper's orders are never listed. A cursor that
// is not Valid is ErrInvalid.
//
// The buy path keeps nothing for this list: a SKU's queue is read only when
// the units the shopper holds there in Redis are more than their open
// orders of it in SQL, which is the case only while one of their orders is
// on its way.
func (s *Service) ListOrders(ctx context.Context, user string, cursor *Cursor, limit int) ([]View, *Cursor, error) {
	if !cursor.Valid() {
		return nil, nil, errCursor
	}
	// The queue first, SQL after: an order the drain moves in between is
	// read from SQL, never missed.
	queued, err := s.queuedOrders(ctx, user)
	if err != nil {
		return nil, nil, err
	}
	for id, v := range queued {
		if !cursor.after(&v) {
			delete(queued, id)
		}
	}

	q := s.db.WithContext(ctx).Where("user_id = ?", user)
	if cursor != nil {
		at := time.UnixMilli(cursor.CreatedMS).UTC()
		q = q.Where("created_at < ? OR (created_at = ? AND order_id < ?)", at, at, cursor.OrderID)
	}
	var rows []Order
	if err := q.Order("created_at DESC, order_id DESC").Limit(limit + 1).Find(&rows).Error; err != nil {
		return nil, nil, fmt.Errorf("order: list orders: %w", err)
	}
	views := make([]View, 0, len(rows)+len(queued))
	for i := range rows {
		delete(queued, rows[i].OrderID)
		views = append(views, *rows[i].View())
	}
	for _, v := range queued {
		views = append(views, v)
	}
	slices.SortFunc(views, func(a, b View) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.OrderID, a.OrderID)
	})
	if len(views) <= limit {
		return views, nil, nil
	}
	views = views[:limit]
	last := views[limit-1]
	return views, &Cursor{CreatedMS: last.CreatedAt.UnixMilli(), OrderID: last.OrderID}, nil
}

// queuedOrders returns user's orders still in a queue, of the sales that
// ended less than QueuedWindow ago.
func (s *Service) queuedOrders(ctx context.Context, user string) (map[string]View, error) {
	skus, err := s.skus.List(ctx, s.o.Now().Add(-QueuedWindow))
	if err != nil {
		return nil, err
	}
	homes := make([]stock.Part, len(skus))
	homeOf := make(map[uint64]stock.Part, len(skus))
	keeps := make(map[uint64]bool, len(skus))
	for i := range skus {
		homes[i] = skus[i].Layout().Home(user)
		homeOf[skus[i].ID] = homes[i]
		keeps[skus[i].ID] = skus[i].LimitCountsCancelled
	}
	held, err := s.store.Held(ctx, user, homes)
	if err != nil || len(held) == 0 {
		return nil, err
	}
	mine := make([]uint64, 0, len(held))
	for sku := range held {
		mine = append(mine, sku)
	}
	// The shopper's count in Redis holds their open orders' units, and
	// those of their cancelled and expired ones where the SKU's limit
	// counts them.
	var rows []struct {
		SKU    uint64 `gorm:"column:sku_id"`
		Status string
		Units  int64
	}
	if err := s.db.WithContext(ctx).Model(&Order{}).Select("sku_id, status, COALESCE(SUM(qty), 0) AS units").
		Where("user_id = ? AND sku_id IN ? AND status IN ?", user, mine,
			[]string{StatusPendingPayment, StatusPaid, StatusCancelled, StatusExpired}).
		Group("sku_id, status").Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("order: units of the shopper's orders: %w", err)
	}
	open := make(map[uint64]int64, len(rows))
	for _, r := range rows {
		if r.Status == StatusPendingPayment || r.Status == StatusPaid || keeps[r.SKU] {
			open[r.SKU] += r.Units
		}
	}
	queued := map[string]View{}
	for sku, units := range held {
		if units <= open[sku] {
			continue // every unit held is in SQL: nothing of theirs is queued
		}
		tasks, _, err := s.store.QueuedOrders(ctx, homeOf[sku])
		if err != nil {
			return nil, err
		}
		for _, t := range tasks {
			if t.User != user {
				continue
			}
			queued[t.OrderID] = s.taskView(t)
		}
	}
	// A task written to SQL and not yet acknowledged is no longer queued.
	candidates := make([]string, 0, len(queued))
	for id := range queued {
		candidates = append(candidates, id)
	}
	inSQL, err := ExistingIDs(s.db.WithContext(ctx), candidates)
	if err != nil {
		return nil, err
	}
	for id := range inSQL {
		delete(queued, id)
	}
	return queued, nil
}

// ExistingIDs reports which of the order ids are in SQL, reading db (a
// transaction's snapshot, when it is one).
func ExistingIDs(db *gorm.DB, orderIDs []string) (map[string]bool, error) {
	found := make(map[string]bool, len(orderIDs))
	const chunk = 1000
	for i := 0; i < len(orderIDs); i += chunk {
		ids := orderIDs[i:min(i+chunk, len(orderIDs))]
		var have []string
		if err := db.Model(&Order{}).Where("order_id IN ?", ids).Pluck("order_id", &have).Error; err != nil {
			return nil, fmt.Errorf("order: orders in sql: %w", err)
		}
		for _, id := range have {
			found[id] = true
		}
	}
	return found, nil
}
