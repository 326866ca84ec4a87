package sale

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/order"
	"github.com/seckill/seckill/internal/stock"
	"gorm.io/gorm"
)

// Reconcile rebuilds sku's Redis state from SQL and the orders still queued:
// units left = stock_total - sold - queued, buyers = active orders per user
// plus queued ones, the orders SQL closed marked as returned, and the
// request ids of its orders remembered again. Buyers of the SKU get ErrBusy
// for the moment it takes.
func (s *Service) Reconcile(ctx context.Context, id uint64) (*Report, error) {
	if _, err := s.skus.Get(ctx, id); err != nil {
		return nil, err // catalog.ErrNotFound: nothing to rebuild
	}
	var r *Report
	err := s.exclusive(ctx, id, func(ctx context.Context) error {
		var err error
		r, err = s.reconcile(ctx, id)
		return err
	})
	return r, err
}

// reconcile is Reconcile under the SKU's admin lock.
func (s *Service) reconcile(ctx context.Context, id uint64) (*Report, error) {
	const pause = 30 * time.Second
	token, err := s.store.Pause(ctx, id, pause)
	if err != nil {
		return nil, err
	}
	if err := s.rebuild(ctx, id, token); err != nil {
		_ = s.store.Unpause(context.WithoutCancel(ctx), id, token)
		return nil, err
	}
	s.o.Log.Info("redis state rebuilt from sql", "sku", id)
	if err := s.rescheduleDeadlines(ctx, id); err != nil {
		return nil, err
	}
	return s.Audit(ctx, id)
}

// rescheduleDeadlines enqueues the payment deadline of every unpaid order of
// sku again: the deadlines live in the SKU's queue, and a Redis that lost
// its data lost them, which would leave those orders unpaid and their units
// taken for good. A deadline still queued stays; an order in it and in a new
// one is expired once (expiring is idempotent).
func (s *Service) rescheduleDeadlines(ctx context.Context, id uint64) error {
	var rows []order.Order
	if err := s.db.WithContext(ctx).Model(&order.Order{}).Select("order_id, expires_at").
		Where("sku_id = ? AND status = ?", id, order.StatusPendingPayment).Order("expires_at").Scan(&rows).Error; err != nil {
		return fmt.Errorf("sale: reschedule payment deadlines: %w", err)
	}
	if _, err := s.store.Lookup(id).EnqueueBatch(ctx, order.Deadlines(rows)); err != nil {
		return fmt.Errorf("sale: reschedule payment deadlines: %w", err)
	}
	return nil
}

// rebuild computes sku's Redis state while buyers, returns and stock
// changes are paused, and writes it. The queue is read first, in one
// script; then SQL, in one REPEATABLE READ snapshot: a batch the drain
// commits meanwhile is either in it (active) or not (still counted as
// queued), never neither, which would leave a unit too many in Redis.
func (s *Service) rebuild(ctx context.Context, id uint64, token string) error {
	queued, _, err := s.store.QueuedOrders(ctx, id)
	if err != nil {
		return err
	}
	r := stock.Rebuilt{Buyers: map[string]int64{}}
	var sku catalog.SKU
	var sold, active, waiting int64
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Take(&sku, "id = ?", id).Error; err != nil {
			return fmt.Errorf("sale: rebuild: %w", err)
		}
		sold = sku.Sold
		var rows []struct {
			UserID string
			Units  int64
		}
		if err := tx.Model(&order.Order{}).Select("user_id, SUM(qty) AS units").
			Where("sku_id = ? AND status IN ?", id, []string{order.StatusPendingPayment, order.StatusPaid}).
			Group("user_id").Scan(&rows).Error; err != nil {
			return fmt.Errorf("sale: rebuild: %w", err)
		}
		for _, row := range rows {
			r.Buyers[row.UserID] += row.Units
			active += row.Units
		}
		if err := tx.Model(&order.Order{}).Where("sku_id = ? AND status IN ?", id,
			[]string{order.StatusCancelled, order.StatusExpired, order.StatusFailed}).Pluck("order_id", &r.Returned).Error; err != nil {
			return fmt.Errorf("sale: rebuild: %w", err)
		}
		var reqs []struct {
			UserID    string
			RequestID string
			OrderID   string
			CreatedAt time.Time
		}
		if err := tx.Model(&order.Order{}).Select("user_id, request_id, order_id, created_at").
			Where("sku_id = ? AND request_id IS NOT NULL", id).Scan(&reqs).Error; err != nil {
			return fmt.Errorf("sale: rebuild: %w", err)
		}
		for _, q := range reqs {
			r.Requests = append(r.Requests, stock.Replay{User: q.UserID, RequestID: q.RequestID, OrderID: q.OrderID, Created: q.CreatedAt})
		}
		inSQL, err := existing(tx, queued)
		if err != nil {
			return err
		}
		for _, t := range queued {
			if !inSQL[t.OrderID] {
				r.Buyers[t.User] += int64(t.Qty)
				waiting += int64(t.Qty)
			}
		}
		return nil
	}, s.snapshotTx())
	if err != nil {
		return err
	}
	r.Config = s.config(&sku)
	r.Left = max(0, sku.StockTotal-max(sold, active)-waiting)
	return s.store.Rebuild(ctx, id, token, r)
}

// snapshotTx is the isolation of a transaction whose reads must be one
// snapshot: REPEATABLE READ on MySQL, set explicitly since a server's
// default may be READ COMMITTED; SQLite's transactions are serializable.
func (s *Service) snapshotTx() *sql.TxOptions {
	if s.db.Dialector.Name() == "mysql" {
		return &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}
	}
	return nil
}

// RebuildMissing rebuilds the Redis state of every recent SKU Redis does not
// know (after Redis lost its data); it runs at start.
func (s *Service) RebuildMissing(ctx context.Context) error {
	skus, err := s.skus.List(ctx, s.o.Now().Add(-s.o.PaymentTimeout-time.Hour))
	if err != nil {
		return err
	}
	for _, sku := range skus {
		if _, ok, err := s.store.State(ctx, sku.ID); err != nil {
			return err
		} else if ok {
			continue
		}
		if _, err := s.Reconcile(ctx, sku.ID); err != nil {
			if ctx.Err() != nil {
				return err
			}
			// Another instance may be rebuilding it; buyers of this SKU
			// trigger a rebuild again if it is still missing.
			s.o.Log.Warn("rebuild of a sku missing in redis did not complete", "sku", sku.ID, "err", err.Error())
		}
	}
	return nil
}

// OnStateLost rebuilds one SKU whose Redis state vanished while serving.
func (s *Service) OnStateLost(sku uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s.o.Log.Warn("redis has no state for a sku; rebuilding it from sql", "sku", sku)
	if _, err := s.Reconcile(ctx, sku); err != nil {
		s.o.Log.Error("rebuild failed", "sku", sku, "err", err.Error())
	}
}

// Rebuild rebuilds sku's Redis state from SQL, as Reconcile does, for a
// caller that needs no report (the drain, after SQL's guard refused an
// order).
func (s *Service) Rebuild(ctx context.Context, sku uint64) error {
	_, err := s.Reconcile(ctx, sku)
	return err
}
