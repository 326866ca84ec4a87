package order

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/orderid"
)

// SupportQuery is what support staff look for among all orders; a field
// left zero matches every order.
type SupportQuery struct {
	SKU      uint64   // the SKU's orders, its queued ones included
	User     string   // the shopper's orders
	Statuses []string // the orders in one of these statuses
	// PaymentReference, when set, names one order by its payment
	// reference (orderid.Reference).
	PaymentReference string
}

// sqlStatuses are the statuses of an order in SQL, each listed by its own
// range of an index when the list has no shopper.
var sqlStatuses = []string{StatusPendingPayment, StatusPaid, StatusCancelled, StatusExpired, StatusFailed}

// Validate checks the query before any I/O: a SKU id from 1 to catalog.MaxID,
// a valid user id (ValidUserID), a payment reference that names an order id, known statuses, and a SKU for queued
// orders, which are found in their SKU's queue. The error wraps ErrInvalid.
func (q SupportQuery) Validate() error {
	switch {
	case q.SKU != 0 && !catalog.ValidID(q.SKU):
		return fmt.Errorf("%w: sku_id must be an integer from 1 to %d", ErrInvalid, uint64(catalog.MaxID))
	case q.User != "" && !ValidUserID(q.User):
		return fmt.Errorf("%w: user_id must be 1 to %d letters, digits or - _ . : @", ErrInvalid, MaxUserIDLen)
	case q.PaymentReference != "" && !validReference(q.PaymentReference):
		return fmt.Errorf("%w: payment_reference must be an order's payment reference: %d letters and digits", ErrInvalid, orderid.ReferenceLen)
	}
	for _, st := range q.Statuses {
		if st != StatusQueued && !slices.Contains(sqlStatuses, st) {
			return fmt.Errorf("%w: status must be a comma-separated list of queued, %s", ErrInvalid, strings.Join(sqlStatuses, ", "))
		}
		if st == StatusQueued && q.SKU == 0 {
			return fmt.Errorf("%w: status queued needs sku_id: queued orders are read from their SKU's queue", ErrInvalid)
		}
	}
	return nil
}

// wants reports whether the query matches orders in status.
func (q SupportQuery) wants(status string) bool {
	return len(q.Statuses) == 0 || slices.Contains(q.Statuses, status)
}

// inSQL returns the statuses of SQL's orders the query matches, each once.
func (q SupportQuery) inSQL() []string {
	var out []string
	for _, st := range sqlStatuses {
		if q.wants(st) {
			out = append(out, st)
		}
	}
	return out
}

// SupportList returns up to limit of the orders matching q, whoever bought
// them, newest first (by creation time, then id), after the cursor (nil:
// from the newest), and the cursor of the next page (nil after the last).
// A cursor names a place in that order, so orders placed meanwhile never
// shift the pages after it. Orders still queued are listed when q names a
// SKU. Errors: ErrInvalid (see SupportQuery.Validate, and a cursor that is
// not Valid).
func (s *Service) SupportList(ctx context.Context, q SupportQuery, cursor *Cursor, limit int) ([]AdminView, *Cursor, error) {
	if err := q.Validate(); err != nil {
		return nil, nil, err
	}
	if !cursor.Valid() {
		return nil, nil, errCursor
	}
	if q.PaymentReference != "" {
		v, err := s.byReference(ctx, q, cursor)
		return v, nil, err
	}
	// The queues first, SQL after: an order the drain moves in between is
	// read from SQL, never missed, and listed once.
	queued, err := s.supportQueued(ctx, q, cursor)
	if err != nil {
		return nil, nil, err
	}
	rows, err := s.supportRows(ctx, q, cursor, limit+1)
	if err != nil {
		return nil, nil, err
	}
	if err := s.dropWritten(ctx, queued); err != nil {
		return nil, nil, err
	}
	views := make([]AdminView, 0, len(rows)+len(queued))
	for i := range rows {
		delete(queued, rows[i].OrderID)
		views = append(views, rows[i].adminView())
	}
	for _, v := range queued {
		views = append(views, v)
	}
	slices.SortFunc(views, newestFirst)
	if len(views) <= limit {
		return views, nil, nil
	}
	views = views[:limit]
	last := views[limit-1]
	return views, &Cursor{CreatedMS: last.CreatedAt.UnixMilli(), OrderID: last.OrderID}, nil
}

// byReference is SupportList of a query naming a payment reference: its
// order if it matches the other filters and comes after the cursor.
func (s *Service) byReference(ctx context.Context, q SupportQuery, cursor *Cursor) ([]AdminView, error) {
	id, _ := orderid.FromReference(q.PaymentReference)
	v, err := s.SupportGet(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if (q.SKU != 0 && v.SKU != q.SKU) || (q.User != "" && v.User != q.User) || !q.wants(v.Status) || !cursor.after(&v.View) {
		return nil, nil
	}
	return []AdminView{*v}, nil
}

// validReference reports whether ref is an order's payment reference.
func validReference(ref string) bool {
	_, ok := orderid.FromReference(ref)
	return ok
}

// newestFirst orders views as the lists do: by creation time (to the
// millisecond, as cursors name it), then id, descending.
func newestFirst(a, b AdminView) int {
	if c := cmp.Compare(b.CreatedAt.UnixMilli(), a.CreatedAt.UnixMilli()); c != 0 {
		return c
	}
	return strings.Compare(b.OrderID, a.OrderID)
}

// supportQueued returns the orders matching q in its SKU's queues (one per
// stock bucket) after the cursor; none unless q names a SKU and takes
// queued orders.
func (s *Service) supportQueued(ctx context.Context, q SupportQuery, cursor *Cursor) (map[string]AdminView, error) {
	if q.SKU == 0 || !q.wants(StatusQueued) {
		return nil, nil
	}
	sku, err := s.skus.Get(ctx, q.SKU)
	if errors.Is(err, catalog.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	queued := map[string]AdminView{}
	for _, p := range sku.Layout().Parts() {
		tasks, _, err := s.store.QueuedOrders(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("order: queued orders of sku %d: %w", sku.ID, err)
		}
		for _, t := range tasks {
			if q.User != "" && t.User != q.User {
				continue
			}
			if v := s.queuedView(t); cursor.after(&v.View) {
				queued[t.OrderID] = v
			}
		}
	}
	return queued, nil
}

// dropWritten removes from queued the orders SQL has: a task written and
// not yet acknowledged is no longer queued.
func (s *Service) dropWritten(ctx context.Context, queued map[string]AdminView) error {
	if len(queued) == 0 {
		return nil
	}
	ids := make([]string, 0, len(queued))
	for id := range queued {
		ids = append(ids, id)
	}
	inSQL, err := ExistingIDs(s.db.WithContext(ctx), ids)
	if err != nil {
		return err
	}
	for id := range inSQL {
		delete(queued, id)
	}
	return nil
}

// supportRows returns up to n of SQL's orders matching q after the cursor,
// newest first per query. Each query reads an index in the list's order
// (migrations 00002 and 00005): a shopper's orders through
// orders_user_created, the other filters checked on its rows; otherwise one
// range per status, of orders_sku_status_created with a SKU and of
// orders_status_created without, merged by the caller.
func (s *Service) supportRows(ctx context.Context, q SupportQuery, cursor *Cursor, n int) ([]supportRow, error) {
	statuses := q.inSQL()
	if len(statuses) == 0 {
		return nil, nil
	}
	if q.User != "" {
		tx := s.db.WithContext(ctx).Where("user_id = ?", q.User)
		if q.SKU != 0 {
			tx = tx.Where("sku_id = ?", q.SKU)
		}
		if len(q.Statuses) > 0 {
			tx = tx.Where("status IN ?", statuses)
		}
		return orderPage(tx, cursor, n)
	}
	var rows []supportRow
	for _, st := range statuses {
		tx := s.db.WithContext(ctx)
		if q.SKU != 0 {
			tx = tx.Where("sku_id = ?", q.SKU)
		}
		page, err := orderPage(tx.Where("status = ?", st), cursor, n)
		if err != nil {
			return nil, err
		}
		rows = append(rows, page...)
	}
	return rows, nil
}

// orderPage reads up to n of the orders tx selects after the cursor, newest
// first.
func orderPage(tx *gorm.DB, cursor *Cursor, n int) ([]supportRow, error) {
	if cursor != nil {
		at := time.UnixMilli(cursor.CreatedMS).UTC()
		tx = tx.Where("(created_at < ? OR (created_at = ? AND order_id < ?))", at, at, cursor.OrderID)
	}
	var rows []supportRow
	if err := tx.Order("created_at DESC, order_id DESC").Limit(n).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("order: list orders for support: %w", err)
	}
	return rows, nil
}
