package order

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"gorm.io/gorm"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/lock"
	"github.com/seckill/seckill/internal/stock"
)

// SKUView is what shoppers and admins see of a SKU.
type SKUView struct {
	ID           uint64    `json:"id"`
	Name         string    `json:"name"`
	PriceCents   int64     `json:"price_cents"`
	StockTotal   int64     `json:"stock_total"`
	StockLeft    int64     `json:"stock_left"`
	PerUserLimit int       `json:"per_user_limit"`
	StartsAt     time.Time `json:"starts_at"`
	EndsAt       time.Time `json:"ends_at"`
	State        string    `json:"state"`
}

// SKU returns the SKU as a shopper sees it, with the units left in Redis.
// Errors: catalog.ErrNotFound.
func (s *Service) SKU(ctx context.Context, id uint64) (*SKUView, error) {
	sku, err := s.cache.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	st, ok, err := s.store.State(ctx, id)
	if err != nil {
		return nil, err
	}
	left := st.Left
	if !ok {
		// Redis lost the SKU; SQL knows at least what is persisted.
		left = max(0, sku.StockTotal-sku.Sold)
	}
	return s.skuView(sku, left), nil
}

func (s *Service) skuView(sku *catalog.SKU, left int64) *SKUView {
	return &SKUView{
		ID: sku.ID, Name: sku.Name, PriceCents: sku.PriceCents, StockTotal: sku.StockTotal,
		StockLeft: left, PerUserLimit: sku.PerUserLimit, StartsAt: sku.StartsAt.UTC(), EndsAt: sku.EndsAt.UTC(),
		State: sku.State(s.o.Now(), left),
	}
}

// UpsertSKU creates a SKU, or updates the one spec.ID names, in SQL and in
// Redis. Re-running the same spec changes nothing. A stock below what is
// sold (in SQL) or taken (in Redis) is refused with catalog.ErrBelowSold
// and changes nothing. An existing SKU Redis has lost is rebuilt from SQL,
// never created afresh. Errors also: catalog.ErrInvalid, stock.ErrBusy.
func (s *Service) UpsertSKU(ctx context.Context, spec catalog.Spec) (*SKUView, bool, error) {
	if err := spec.Validate(); err != nil {
		return nil, false, err
	}
	if spec.ID == 0 {
		return s.createSKU(ctx, spec)
	}
	var view *SKUView
	created := false
	err := s.exclusive(ctx, spec.ID, func(ctx context.Context) error {
		cur, err := s.skus.Get(ctx, spec.ID)
		if errors.Is(err, catalog.ErrNotFound) {
			view, created, err = s.createSKU(ctx, spec)
			return err
		}
		if err != nil {
			return err
		}
		next := *cur
		next.StockTotal, next.PerUserLimit, next.EndsAt = spec.Stock, spec.PerUserLimit, spec.EndsAt
		sku, left, err := s.change(ctx, cur, s.config(&next), func(ctx context.Context) (*catalog.SKU, error) {
			sku, _, _, err := s.skus.Upsert(ctx, spec)
			return sku, err
		})
		if err == nil {
			view = s.skuView(sku, left)
		}
		return err
	})
	return view, created, err
}

// createSKU creates a SKU in SQL, then its state in Redis.
func (s *Service) createSKU(ctx context.Context, spec catalog.Spec) (*SKUView, bool, error) {
	sku, created, _, err := s.skus.Upsert(ctx, spec)
	if err != nil {
		return nil, false, err
	}
	defer s.cache.Forget(sku.ID)
	// A SKU that is new in SQL has no units taken anywhere; if Redis fails
	// here, the first buyer's ErrStateLost rebuilds it from SQL.
	left, err := s.store.Configure(ctx, sku.ID, s.config(sku), created)
	if err != nil {
		return nil, false, err
	}
	return s.skuView(sku, left), created, nil
}

// SetStock sets a SKU's stock_total (a top-up or a cut, never below what is
// sold or taken: catalog.ErrBelowSold). Errors also: catalog.ErrNotFound,
// catalog.ErrInvalid, stock.ErrBusy.
func (s *Service) SetStock(ctx context.Context, id uint64, total int64) (*SKUView, error) {
	if total < 0 || total > catalog.MaxStock {
		return nil, fmt.Errorf("%w: stock_total must be from 0 to %d", catalog.ErrInvalid, catalog.MaxStock)
	}
	var view *SKUView
	err := s.exclusive(ctx, id, func(ctx context.Context) error {
		cur, err := s.skus.Get(ctx, id)
		if err != nil {
			return err
		}
		next := *cur
		next.StockTotal = total
		sku, left, err := s.change(ctx, cur, s.config(&next), func(ctx context.Context) (*catalog.SKU, error) {
			if _, err := s.skus.SetStockTotal(ctx, id, total); err != nil {
				return nil, err
			}
			return s.skus.Get(ctx, id)
		})
		if err == nil {
			view = s.skuView(sku, left)
		}
		return err
	})
	return view, err
}

// change writes a change of an existing SKU to both stores (write does the
// SQL side), in the order that lets a failure between the two only
// undersell, never fail an order Redis accepted: a cut lowers Redis first
// — Redis refuses it below the units taken, and then nothing is written —
// and SQL after; a top-up raises SQL first and Redis after. A SKU Redis has
// lost is rebuilt from SQL after the SQL write. Run it under exclusive.
func (s *Service) change(ctx context.Context, cur *catalog.SKU, next stock.Config, write func(context.Context) (*catalog.SKU, error)) (*catalog.SKU, int64, error) {
	defer s.cache.Forget(cur.ID)
	cut := next.Total < cur.StockTotal
	lost := false
	var left int64
	if cut {
		var err error
		left, err = s.store.Configure(ctx, cur.ID, next, false)
		switch {
		case errors.Is(err, stock.ErrBelowTaken):
			return nil, 0, fmt.Errorf("%w: units already taken in Redis", catalog.ErrBelowSold)
		case errors.Is(err, stock.ErrStateLost):
			lost = true
		case err != nil:
			return nil, 0, err
		}
	}
	sku, err := write(ctx)
	if err != nil {
		if cut && !lost && (errors.Is(err, catalog.ErrBelowSold) || errors.Is(err, catalog.ErrInvalid) || errors.Is(err, catalog.ErrNotFound)) {
			// SQL refused and kept the old total: Redis may have it back.
			// After any other error SQL may hold the cut, so Redis keeps it
			// too (it can only undersell until the change is retried).
			if _, rerr := s.store.Configure(context.WithoutCancel(ctx), cur.ID, s.config(cur), false); rerr != nil {
				err = errors.Join(err, rerr)
			}
		}
		return nil, 0, err
	}
	if !cut {
		left, err = s.store.Configure(ctx, cur.ID, s.config(sku), false)
		switch {
		case errors.Is(err, stock.ErrStateLost):
			lost = true
		case err != nil:
			return nil, 0, err
		}
	}
	if lost {
		if _, err := s.reconcile(ctx, cur.ID); err != nil {
			return nil, 0, err
		}
		st, _, err := s.store.State(ctx, cur.ID)
		if err != nil {
			return nil, 0, err
		}
		left = st.Left
	}
	return sku, left, nil
}

// exclusive runs f while holding sku's admin lock: stock changes and
// rebuilds of one SKU run one at a time across every instance, so no two
// of them interleave their SQL and Redis writes. It waits up to 5 seconds
// for the lock (stock.ErrBusy after).
func (s *Service) exclusive(ctx context.Context, sku uint64, f func(context.Context) error) error {
	m, err := s.locks.Lock(ctx, "sku-admin:"+strconv.FormatUint(sku, 10), 10*time.Second,
		lock.WithWaitTimeout(5*time.Second), lock.WithWatchdog(0))
	if errors.Is(err, lock.ErrNotObtained) {
		return fmt.Errorf("%w: another change of sku %d is running", stock.ErrBusy, sku)
	}
	if err != nil {
		return fmt.Errorf("order: lock sku %d: %w", sku, err)
	}
	defer func() { _ = m.Unlock(context.WithoutCancel(ctx)) }()
	// The work stops if the lock is lost (Redis unreachable past its TTL).
	lctx, cancel := m.Context(ctx)
	defer cancel()
	return f(lctx)
}

// config is what Redis needs of sku.
func (s *Service) config(sku *catalog.SKU) stock.Config {
	return stock.Config{Total: sku.StockTotal, Limit: sku.PerUserLimit, Expires: s.stateExpiry(sku), Ends: sku.EndsAt}
}

// stateExpiry is when sku's Redis state may expire: StateRetention after
// its sale and payment window closed (a sale ended early counts from now).
func (s *Service) stateExpiry(sku *catalog.SKU) time.Time {
	end := sku.EndsAt
	if now := s.o.Now(); now.After(end) {
		end = now
	}
	return end.Add(s.o.PaymentTimeout + s.o.StateRetention)
}

// Report is the invariant check of one SKU.
type Report struct {
	SKU            uint64   `json:"sku_id"`
	StockTotal     int64    `json:"stock_total"`
	Sold           int64    `json:"sold"`
	RedisLeft      *int64   `json:"redis_left"` // null when Redis has no state for the SKU
	Queued         int64    `json:"queued"`     // units accepted, not yet in SQL
	QueuedOrders   int64    `json:"queued_orders"`
	Orders         int64    `json:"orders"` // rows in SQL
	PendingPayment int64    `json:"pending_payment"`
	Paid           int64    `json:"paid"`
	Cancelled      int64    `json:"cancelled"`
	Expired        int64    `json:"expired"`
	Failed         int64    `json:"failed"`
	ActiveUnits    int64    `json:"active_units"` // units of pending_payment and paid orders
	DeadLetters    int64    `json:"dead_letters"`
	Duplicates     int64    `json:"duplicates"`
	OverLimitUsers int64    `json:"over_limit_users"`
	Consistent     bool     `json:"consistent"`
	Violations     []string `json:"violations"`
}

// Audit checks one SKU's invariants: sold <= stock_total, sold equals the
// units of active orders, no order twice, no shopper over the limit, no
// accepted order dead-lettered, and redis_left + queued + active ==
// stock_total. The figures are read from Redis and SQL one after the other,
// so they are exact when the SKU is at rest; while orders move, a
// disagreement is read again a few times before it is reported.
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
	if _, err := s.skus.Get(ctx, id); err != nil {
		return nil, err // catalog.ErrNotFound before any Redis read
	}
	r := &Report{SKU: id, Violations: []string{}}
	st, ok, err := s.store.State(ctx, id)
	if err != nil {
		return nil, err
	}
	if ok {
		r.RedisLeft = &st.Left
	}
	queued, dead, err := s.queuedTasks(ctx, id)
	if err != nil {
		return nil, err
	}
	r.DeadLetters = dead
	// Read SQL after the queue: an order drained in between shows in SQL
	// and is dropped from the queued ones below, never counted twice.
	sku, err := s.skus.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	r.StockTotal, r.Sold = sku.StockTotal, sku.Sold
	db := s.db.WithContext(ctx)
	var rows []struct {
		Status string
		N      int64
		Units  int64
	}
	if err := db.Model(&Order{}).Select("status, COUNT(*) AS n, COALESCE(SUM(qty), 0) AS units").
		Where("sku_id = ?", id).Group("status").Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("order: audit: %w", err)
	}
	for _, row := range rows {
		r.Orders += row.N
		switch row.Status {
		case StatusPendingPayment:
			r.PendingPayment, r.ActiveUnits = row.N, r.ActiveUnits+row.Units
		case StatusPaid:
			r.Paid, r.ActiveUnits = row.N, r.ActiveUnits+row.Units
		case StatusCancelled:
			r.Cancelled = row.N
		case StatusExpired:
			r.Expired = row.N
		case StatusFailed:
			r.Failed = row.N
		}
	}
	if err := db.Raw(`SELECT COUNT(*) FROM (SELECT order_id FROM orders WHERE sku_id = ? GROUP BY order_id HAVING COUNT(*) > 1) d`, id).
		Scan(&r.Duplicates).Error; err != nil {
		return nil, fmt.Errorf("order: audit: %w", err)
	}
	if err := db.Raw(`SELECT COUNT(*) FROM (SELECT user_id FROM orders WHERE sku_id = ? AND status IN (?, ?) GROUP BY user_id HAVING SUM(qty) > ?) u`,
		id, StatusPendingPayment, StatusPaid, sku.PerUserLimit).Scan(&r.OverLimitUsers).Error; err != nil {
		return nil, fmt.Errorf("order: audit: %w", err)
	}
	if len(queued) > 0 {
		inSQL, err := existing(s.db.WithContext(ctx), queued)
		if err != nil {
			return nil, err
		}
		for _, t := range queued {
			if !inSQL[t.OrderID] {
				r.Queued += int64(t.Qty)
				r.QueuedOrders++
			}
		}
	}

	fail := func(format string, args ...any) { r.Violations = append(r.Violations, fmt.Sprintf(format, args...)) }
	if r.Sold > r.StockTotal {
		fail("oversold: sold %d > stock_total %d", r.Sold, r.StockTotal)
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
		if got := *r.RedisLeft + r.Queued + r.ActiveUnits; got != r.StockTotal {
			fail("redis_left %d + queued %d + active %d = %d != stock_total %d", *r.RedisLeft, r.Queued, r.ActiveUnits, got, r.StockTotal)
		}
	}
	r.Consistent = len(r.Violations) == 0
	return r, nil
}

// queuedTasks returns the order tasks in sku's queue (pending, in flight or
// dead), read in one step, and how many of them are dead letters.
func (s *Service) queuedTasks(ctx context.Context, sku uint64) ([]stock.OrderTask, int64, error) {
	snap, err := s.store.Lookup(sku).Snapshot(ctx, stock.TaskCreate)
	if err != nil {
		return nil, 0, err
	}
	out := make([]stock.OrderTask, 0, len(snap))
	var dead int64
	for _, in := range snap {
		t, err := stock.DecodeTask(in.Payload)
		if err != nil {
			continue
		}
		out = append(out, t)
		if in.Dead {
			dead++
		}
	}
	return out, dead, nil
}

// existing returns which of the tasks' orders are in SQL.
func existing(db *gorm.DB, tasks []stock.OrderTask) (map[string]bool, error) {
	ids := make([]string, len(tasks))
	for i, t := range tasks {
		ids[i] = t.OrderID
	}
	return existingIDs(db, ids)
}

// existingIDs reports which of the order ids are in SQL.
func existingIDs(db *gorm.DB, orderIDs []string) (map[string]bool, error) {
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
	var rows []Order
	if err := s.db.WithContext(ctx).Model(&Order{}).Select("order_id, expires_at").
		Where("sku_id = ? AND status = ?", id, StatusPendingPayment).Order("expires_at").Scan(&rows).Error; err != nil {
		return fmt.Errorf("order: reschedule payment deadlines: %w", err)
	}
	if _, err := s.store.Lookup(id).EnqueueBatch(ctx, deadlines(rows)); err != nil {
		return fmt.Errorf("order: reschedule payment deadlines: %w", err)
	}
	return nil
}

// rebuild computes sku's Redis state while buyers, returns and stock
// changes are paused, and writes it. The queue is read first, in one
// script; then SQL, in one REPEATABLE READ snapshot: a batch the drain
// commits meanwhile is either in it (active) or not (still counted as
// queued), never neither, which would leave a unit too many in Redis.
func (s *Service) rebuild(ctx context.Context, id uint64, token string) error {
	queued, _, err := s.queuedTasks(ctx, id)
	if err != nil {
		return err
	}
	r := stock.Rebuilt{Buyers: map[string]int64{}}
	var sku catalog.SKU
	var sold, active, waiting int64
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Take(&sku, "id = ?", id).Error; err != nil {
			return fmt.Errorf("order: rebuild: %w", err)
		}
		sold = sku.Sold
		var rows []struct {
			UserID string
			Units  int64
		}
		if err := tx.Model(&Order{}).Select("user_id, SUM(qty) AS units").
			Where("sku_id = ? AND status IN ?", id, []string{StatusPendingPayment, StatusPaid}).
			Group("user_id").Scan(&rows).Error; err != nil {
			return fmt.Errorf("order: rebuild: %w", err)
		}
		for _, row := range rows {
			r.Buyers[row.UserID] += row.Units
			active += row.Units
		}
		if err := tx.Model(&Order{}).Where("sku_id = ? AND status IN ?", id,
			[]string{StatusCancelled, StatusExpired, StatusFailed}).Pluck("order_id", &r.Returned).Error; err != nil {
			return fmt.Errorf("order: rebuild: %w", err)
		}
		var reqs []struct {
			UserID    string
			RequestID string
			OrderID   string
			CreatedAt time.Time
		}
		if err := tx.Model(&Order{}).Select("user_id, request_id, order_id, created_at").
			Where("sku_id = ? AND request_id IS NOT NULL", id).Scan(&reqs).Error; err != nil {
			return fmt.Errorf("order: rebuild: %w", err)
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
