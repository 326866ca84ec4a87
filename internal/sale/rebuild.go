package sale

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/seckill/seckill/internal/backoff"
	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/order"
	"github.com/seckill/seckill/internal/stock"
	"github.com/seckill/seckill/internal/storeerr"
)

// Reconcile rebuilds sku's Redis state from SQL and the orders still queued:
// units left = stock_total - sold - queued, buyers = active orders per user
// plus queued ones (plus cancelled and expired ones when the SKU's limit
// counts them), the orders SQL closed marked as returned, and the request
// ids of its orders remembered again. Buyers of the SKU get ErrBusy for the
// moment it takes.
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

// rebuildTries and rebuildRetry bound the attempts of a rebuild that
// fails on an unavailable store: about 6 s in all, inside the pause.
const rebuildTries = 5

var rebuildRetry = backoff.Exponential{Min: 200 * time.Millisecond, Max: 2 * time.Second}

// reconcile is Reconcile under the SKU's admin lock.
func (s *Service) reconcile(ctx context.Context, id uint64) (*Report, error) {
	const pause = 30 * time.Second
	sku, err := s.skus.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	parts := sku.Layout().Parts()
	// A rebuild that a stalled Redis stops part-way leaves the buckets it
	// wrote holding their shoppers' units and bucket 0 as it was: nothing
	// oversells, but the buckets' totals no longer add up to SQL's, and a
	// later stock change computes its delta from them. So one that fails
	// on an unavailable store is made again, whole, while it may still run.
	for attempt := 0; ; attempt++ {
		token, err := s.store.Pause(ctx, parts, pause)
		if err == nil {
			if err = s.rebuild(ctx, id, parts, token); err != nil {
				_ = s.store.Unpause(context.WithoutCancel(ctx), parts, token)
			}
		}
		if err == nil {
			break
		}
		if attempt+1 >= rebuildTries || !storeerr.Unavailable(err) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(rebuildRetry.Jittered(attempt)):
		}
	}
	s.o.Log.Info("redis state rebuilt from sql", "sku", id)
	if err := s.rescheduleDeadlines(ctx, sku); err != nil {
		return nil, err
	}
	return s.Audit(ctx, id)
}

// rescheduleDeadlines enqueues the payment deadline of every unpaid order of
// sku again: the deadlines live in the SKU's queue, and a Redis that lost
// its data lost them, which would leave those orders unpaid and their units
// taken for good. A deadline still queued stays; an order in it and in a new
// one is expired once (expiring is idempotent).
func (s *Service) rescheduleDeadlines(ctx context.Context, sku *catalog.SKU) error {
	var rows []order.Order
	if err := s.db.WithContext(ctx).Model(&order.Order{}).Select("order_id, expires_at").
		Where("sku_id = ? AND status = ?", sku.ID, order.StatusPendingPayment).Order("expires_at").Scan(&rows).Error; err != nil {
		return fmt.Errorf("sale: reschedule payment deadlines: %w", err)
	}
	byPart := map[stock.Part][]order.Order{}
	for _, o := range rows {
		p := sku.Layout().Of(o.OrderID)
		byPart[p] = append(byPart[p], o)
	}
	for p, os := range byPart {
		if _, err := s.store.Lookup(p).EnqueueBatch(ctx, order.Deadlines(os)); err != nil {
			return fmt.Errorf("sale: reschedule payment deadlines: %w", err)
		}
	}
	return nil
}

// rebuild computes the Redis state of sku's parts while buyers, returns,
// moves between buckets and stock changes are paused, and writes it. The
// queues are read first, each in one script; then SQL, in one REPEATABLE
// READ snapshot: a batch the drain commits meanwhile is either in it
// (active) or not (still counted as queued), never neither, which would
// leave a unit too many in Redis.
func (s *Service) rebuild(ctx context.Context, id uint64, parts []stock.Part, token string) error {
	var queued []stock.OrderTask
	for _, p := range parts {
		q, _, err := s.store.QueuedOrders(ctx, p)
		if err != nil {
			return err
		}
		queued = append(queued, q...)
	}
	var r stock.Rebuilt
	var sku catalog.SKU
	var counts limitCounts
	var waiting int64
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Take(&sku, "id = ?", id).Error; err != nil {
			return fmt.Errorf("sale: rebuild: %w", err)
		}
		var err error
		if counts, err = countLimits(tx, &sku); err != nil {
			return err
		}
		r.Buyers = counts.held
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
	left := max(0, sku.StockTotal-max(sku.Sold, counts.active)-waiting)
	split := splitRebuilt(id, s.config(&sku), r, counts.kept, len(parts), left)
	// Bucket 0 holds every unit left and is written last; the others hold
	// only what their shoppers took. A rebuild that stops part-way leaves
	// the buckets it wrote with nothing to sell and bucket 0 as it was (and
	// paused until the pause expires): it can undersell, never oversell.
	for i := len(parts) - 1; i >= 0; i-- {
		if err := s.store.Rebuild(ctx, parts[i], token, split[i]); err != nil {
			return err
		}
	}
	return nil
}

// splitRebuilt divides SKU id's rebuilt state r over its buckets: each
// shopper's units and request ids to their home bucket, each closed order
// to the bucket it was taken from, and the units left, left, to bucket 0.
// r.Buyers are the units each shopper holds, kept the units of their
// closed orders the SKU's limit counts: a shopper's count in their home
// bucket is both. Each bucket's total is what its shoppers hold, bucket
// 0's the rest.
func splitRebuilt(id uint64, cfg stock.Config, r stock.Rebuilt, kept map[string]int64, buckets int, left int64) []stock.Rebuilt {
	split := make([]stock.Rebuilt, buckets)
	for i := range split {
		split[i] = stock.Rebuilt{Config: cfg, Buyers: map[string]int64{}}
		split[i].Total = 0
	}
	home := func(user string) *stock.Rebuilt { return &split[stock.Home(id, buckets, user).Bucket] }
	for user, n := range r.Buyers {
		h := home(user)
		h.Buyers[user] += n
		h.Total += n
	}
	for user, n := range kept {
		home(user).Buyers[user] += n
	}
	for _, q := range r.Requests {
		h := home(q.User)
		h.Requests = append(h.Requests, q)
	}
	for _, oid := range r.Returned {
		b := stock.PartOf(id, oid).Bucket
		if b >= buckets {
			b = 0
		}
		split[b].Returned = append(split[b].Returned, oid)
	}
	held := int64(0)
	for i := 1; i < buckets; i++ {
		held += split[i].Total
	}
	split[0].Total = cfg.Total - held
	split[0].Left = left
	return split
}

// snapshotTx is the isolation of a transaction whose reads must be one
// snapshot: REPEATABLE READ on MySQL, set explicitly since a server's
// default may be READ COMMITTED; SQLite's transactions are serializable.
// Not READ ONLY: TiDB refuses START TRANSACTION READ ONLY by default, and
// the snapshot is the same without it.
func (s *Service) snapshotTx() *sql.TxOptions {
	if s.db.Dialector.Name() == "mysql" {
		return &sql.TxOptions{Isolation: sql.LevelRepeatableRead}
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
		if _, ok, err := s.store.Sum(ctx, sku.Layout()); err != nil {
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
	_, err := s.Reconcile(ctx, sku)
	switch {
	case err == nil:
	case errors.Is(err, stock.ErrBusy):
		// Another instance, or an admin's change, holds the SKU: it
		// leaves the state whole, and a buyer who still finds it missing
		// triggers a rebuild again.
		s.o.Log.Warn("rebuild of a sku left to the change already running", "sku", sku, "err", err.Error())
	default:
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
