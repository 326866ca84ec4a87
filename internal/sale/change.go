package sale

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/stock"
	"github.com/seckill/seckill/lock"
)

// change writes a change of an existing SKU to both stores (write does the
// SQL side), in the order that lets a failure between the two only
// undersell, never fail an order Redis accepted: a cut lowers Redis first
// — Redis refuses it below the units taken, and then nothing is written —
// and SQL after; a top-up raises SQL first and Redis after. A SKU Redis has
// lost is rebuilt from SQL after the SQL write, and so is one whose limit
// now counts cancelled orders or no longer does: its shoppers' counts are
// recounted under the new rule. Run it under exclusive.
func (s *Service) change(ctx context.Context, cur *catalog.SKU, next stock.Config, write func(context.Context) (*catalog.SKU, error)) (*catalog.SKU, int64, error) {
	defer s.cache.Forget(cur.ID)
	sh := &shift{cur: cur, next: next}
	if err := s.lower(ctx, sh); err != nil {
		return nil, 0, err
	}
	sku, err := write(ctx)
	if err != nil {
		return nil, 0, s.restore(ctx, sh, err)
	}
	left, err := s.raise(ctx, sh, sku)
	if err != nil {
		return nil, 0, err
	}
	return sku, left, nil
}

// shift is one change of an existing SKU across the two stores (see
// change): the SKU as SQL holds it before, and its Redis state after.
type shift struct {
	cur  *catalog.SKU
	next stock.Config
	cut  bool  // next lowers the total: Redis first
	lost bool  // Redis has no state for the SKU: rebuild it after SQL
	left int64 // the units left once the cut is made
}

// lower is the Redis side of sh before SQL is written: the SKU's buckets
// mended, and a cut made, which Redis refuses below the units taken there
// (catalog.ErrBelowSold, nothing changed).
func (s *Service) lower(ctx context.Context, sh *shift) error {
	if err := s.mendTotals(ctx, sh.cur); err != nil {
		return err
	}
	sh.cut = sh.next.Total < sh.cur.StockTotal
	if !sh.cut {
		return nil
	}
	left, err := s.store.Configure(ctx, sh.cur.ID, sh.next, false)
	switch {
	case errors.Is(err, stock.ErrBelowTaken):
		return fmt.Errorf("%w: units already taken in Redis", catalog.ErrBelowSold)
	case errors.Is(err, stock.ErrStateLost):
		sh.lost = true
	case err != nil:
		return err
	}
	sh.left = left
	return nil
}

// restore gives Redis back the total of sh.cur after SQL refused the
// change (err) and kept it. After any other error SQL may hold the cut, so
// Redis keeps it too (it can only undersell until the change is retried).
// It returns err, with the failure of the restore if there is one.
func (s *Service) restore(ctx context.Context, sh *shift, err error) error {
	if !sh.cut || sh.lost || !refused(err) {
		return err
	}
	if _, rerr := s.store.Configure(context.WithoutCancel(ctx), sh.cur.ID, s.config(sh.cur), false); rerr != nil {
		return errors.Join(err, rerr)
	}
	return err
}

// refused reports whether err is SQL's refusal of a change, which wrote
// nothing.
func refused(err error) bool {
	return errors.Is(err, catalog.ErrBelowSold) || errors.Is(err, catalog.ErrBucketsFixed) || errors.Is(err, catalog.ErrInvalid) ||
		errors.Is(err, catalog.ErrNotFound) || errors.Is(err, catalog.ErrIDTaken)
}

// raise is the Redis side of sh once SQL holds sku: a top-up (or a change
// of anything but the total) made, and the state rebuilt from SQL when it
// was lost or the limit's reading changed. It returns the units left.
func (s *Service) raise(ctx context.Context, sh *shift, sku *catalog.SKU) (int64, error) {
	left := sh.left
	if !sh.cut {
		var err error
		left, err = s.store.Configure(ctx, sh.cur.ID, s.config(sku), false)
		switch {
		case errors.Is(err, stock.ErrStateLost):
			sh.lost = true
		case err != nil:
			return 0, err
		}
	}
	if sh.lost || sku.LimitCountsCancelled != sh.cur.LimitCountsCancelled {
		if _, err := s.reconcile(ctx, sh.cur.ID); err != nil {
			return 0, err
		}
		var err error
		if left, _, err = s.store.Left(ctx, sh.cur.Layout()); err != nil {
			return 0, err
		}
	}
	return left, nil
}

// mendTotals rebuilds the Redis state of sku, split into buckets, from SQL
// when the buckets' totals do not add up to SQL's stock: a rebuild that a
// stalled Redis stopped part-way leaves them so (the buckets it wrote hold
// what their shoppers took, units lent to them still counted by the
// lender), and stock.Configure computes a change's delta from them. A SKU
// Redis has lost is left to the caller (stock.ErrStateLost). Run it under
// exclusive.
func (s *Service) mendTotals(ctx context.Context, sku *catalog.SKU) error {
	if sku.Buckets <= 1 {
		return nil
	}
	st, ok, err := s.store.Sum(ctx, sku.Layout())
	if err != nil || !ok || st.Total == sku.StockTotal {
		return err
	}
	s.o.Log.Warn("redis buckets do not add up to the stock in sql: rebuilding them",
		"sku", sku.ID, "redis_total", st.Total, "sql_total", sku.StockTotal)
	_, err = s.reconcile(ctx, sku.ID)
	return err
}

// exclusive runs f while holding sku's admin lock: stock changes and
// rebuilds of one SKU run one at a time across every instance, so no two
// of them interleave their SQL and Redis writes. It waits up to 5 seconds
// for the lock (stock.ErrBusy after), or until ctx is done.
//
// Once the lock is held, f runs to its end whether or not the caller is
// still there: each change is several writes (a dead letter's delete, then
// the return of its units; a rebuild's pause, writes and unpause), and one
// cut half-way by a client that gave up would leave the SKU inconsistent
// with nobody left to finish it. It stops only if the lock is lost (Redis
// unreachable past its TTL) or after changeTimeout.
func (s *Service) exclusive(ctx context.Context, sku uint64, f func(context.Context) error) error {
	return s.exclusiveAll(ctx, []uint64{sku}, f)
}

// exclusiveAll is exclusive over the admin locks of every SKU of skus,
// taken in ascending id order so that two callers never wait for each
// other; f stops if any of them is lost.
func (s *Service) exclusiveAll(ctx context.Context, skus []uint64, f func(context.Context) error) error {
	skus = slices.Clone(skus)
	slices.Sort(skus)
	return s.hold(ctx, context.WithoutCancel(ctx), slices.Compact(skus), f)
}

// hold takes the admin lock of skus[0], waiting as ctx allows, then those
// of the others, and runs f under work cut short when any is lost.
func (s *Service) hold(ctx, work context.Context, skus []uint64, f func(context.Context) error) error {
	if len(skus) == 0 {
		work, stop := context.WithTimeout(work, changeTimeout)
		defer stop()
		return f(work)
	}
	sku := skus[0]
	m, err := s.locks.Lock(ctx, "sku-admin:"+strconv.FormatUint(sku, 10), 10*time.Second,
		lock.WithWait(5*time.Second), lock.WithWatchdog(0))
	if errors.Is(err, lock.ErrNotObtained) {
		return fmt.Errorf("%w: another change of sku %d is running", stock.ErrBusy, sku)
	}
	if err != nil {
		return fmt.Errorf("sale: lock sku %d: %w", sku, err)
	}
	defer func() { _ = m.Unlock(context.WithoutCancel(ctx)) }()
	held, cancel := m.Context(work)
	defer cancel()
	return s.hold(ctx, held, skus[1:], f)
}

// changeTimeout bounds an admin change of a SKU once it has started.
const changeTimeout = 2 * time.Minute
