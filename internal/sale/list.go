package sale

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/singleflight"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/stock"
)

// ListTTL is how long a computed list of SKUs serves shoppers: a crowd
// refreshing the list costs SQL and Redis one read per ListTTL per instance,
// not one per request.
const ListTTL = time.Second

// listing is every SKU as a shopper sees it, computed at most once per
// ListTTL and shared by the requests in between.
type listing struct {
	mu    sync.Mutex
	at    time.Time
	views []SKUView
	group singleflight.Group
}

// ListSKUs returns up to limit SKUs with ids above after whose state is one
// of states, by id, and the id to continue after (0 when no more match).
// The views are at most ListTTL old.
func (s *Service) ListSKUs(ctx context.Context, states []string, after uint64, limit int) ([]SKUView, uint64, error) {
	all, err := s.allSKUs(ctx)
	if err != nil {
		return nil, 0, err
	}
	i, _ := slices.BinarySearchFunc(all, after+1, func(v SKUView, id uint64) int {
		switch {
		case v.ID < id:
			return -1
		case v.ID > id:
			return 1
		}
		return 0
	})
	out := []SKUView{}
	for ; i < len(all); i++ {
		if !slices.Contains(states, all[i].State) {
			continue
		}
		if len(out) == limit {
			return out, out[len(out)-1].ID, nil
		}
		out = append(out, all[i])
	}
	return out, 0, nil
}

func (s *Service) allSKUs(ctx context.Context) ([]SKUView, error) {
	l := s.list
	l.mu.Lock()
	views, at := l.views, l.at
	l.mu.Unlock()
	if views != nil && s.o.Now().Sub(at) < ListTTL {
		return views, nil
	}
	ch := l.group.DoChan("all", func() (any, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		views, err := s.computeList(ctx)
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		l.views, l.at = views, s.o.Now()
		l.mu.Unlock()
		return views, nil
	})
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.([]SKUView), nil
	}
}

// computeList reads every SKU the shop lists (not hidden) from SQL and the
// units left of those whose sale has not ended from Redis (an ended sale
// shows what SQL sold).
func (s *Service) computeList(ctx context.Context) ([]SKUView, error) {
	skus, err := s.skus.Page(ctx, 0, -1)
	if err != nil {
		return nil, err
	}
	skus = slices.DeleteFunc(skus, func(k catalog.SKU) bool { return k.Hidden })
	now := s.o.Now()
	views := make([]SKUView, len(skus))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := range skus {
		sku := &skus[i]
		left := max(0, sku.StockTotal-sku.Sold)
		if !now.Before(sku.EndsAt) {
			views[i] = *s.skuView(sku, left)
			continue
		}
		g.Go(func() error {
			n, ok, err := s.store.Left(gctx, sku.Layout())
			if err != nil {
				return err
			}
			if ok {
				left = n
			}
			views[i] = *s.skuView(sku, left)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return views, nil
}

// AdminSKUView is a SKU as an admin lists it: the shopper's view, its
// stock buckets, whether the shop's list leaves it out, whether its
// per-user limit counts cancelled and expired orders, and the figures of
// its audit.
type AdminSKUView struct {
	SKUView
	Buckets              int    `json:"buckets"`
	Hidden               bool   `json:"hidden"`
	LimitCountsCancelled bool   `json:"limit_counts_cancelled"`
	Sold                 int64  `json:"sold"`
	RedisLeft            *int64 `json:"redis_left"` // null when Redis has no state for the SKU
	QueuedOrders         int64  `json:"queued_orders"`
	DeadLetters          int64  `json:"dead_letters"`
	// Orders are the SKU's orders in SQL, whatever their status;
	// PendingPayment and Paid those waiting for payment and paid.
	Orders         int64 `json:"orders"`
	PendingPayment int64 `json:"pending_payment"`
	Paid           int64 `json:"paid"`
}

// AdminSKUs returns up to limit SKUs with ids above after, by id, with
// their audit figures, and the id to continue after (0 when no more).
func (s *Service) AdminSKUs(ctx context.Context, after uint64, limit int) ([]AdminSKUView, uint64, error) {
	skus, err := s.skus.Page(ctx, after, limit+1)
	if err != nil {
		return nil, 0, err
	}
	var next uint64
	if len(skus) > limit {
		skus = skus[:limit]
		next = skus[limit-1].ID
	}
	out := make([]AdminSKUView, 0, len(skus))
	for i := range skus {
		r, err := s.audit(ctx, skus[i].ID)
		if err != nil {
			return nil, 0, err
		}
		left := max(0, r.Stock-r.Sold)
		if r.RedisLeft != nil {
			left = *r.RedisLeft
		}
		sku := skus[i]
		sku.StockTotal, sku.Sold = r.Stock, r.Sold
		out = append(out, AdminSKUView{
			SKUView: *s.skuView(&sku, left), Buckets: sku.Buckets, Hidden: sku.Hidden, LimitCountsCancelled: sku.LimitCountsCancelled,
			Sold: r.Sold, RedisLeft: r.RedisLeft, QueuedOrders: r.QueuedOrders, DeadLetters: r.DeadLetters,
			Orders: r.Orders, PendingPayment: r.PendingPayment, Paid: r.Paid,
		})
	}
	return out, next, nil
}

// EndSale ends SKU id's sale now; a sale that has ended is left as it is.
// Redis holds the end before SQL does and before EndSale returns, so no buy
// is accepted after it returns, on any instance, whatever window their
// caches hold. A SKU of a drop ends with every SKU of the drop, which
// share one window (and its first SKU's is the drop room's). Errors:
// catalog.ErrNotFound, stock.ErrBusy.
func (s *Service) EndSale(ctx context.Context, id uint64) (*SKUView, error) {
	ids := []uint64{id}
	if cur, err := s.skus.Get(ctx, id); err == nil && cur.Drop != 0 {
		lead, err := s.skus.Get(ctx, cur.Drop)
		if err != nil {
			return nil, err
		}
		if lead.Group != nil {
			ids = lead.Group.SKUs
		}
	}
	var view *SKUView
	err := s.exclusiveAll(ctx, ids, func(ctx context.Context) error {
		now := s.o.Now().UTC().Truncate(time.Millisecond)
		for _, other := range ids {
			v, err := s.end(ctx, other, now)
			if err != nil {
				return err
			}
			if other == id {
				view = v
			}
		}
		return nil
	})
	s.forgetList()
	return view, err
}

// end ends SKU id's sale at now, as EndSale. Run it under exclusive.
func (s *Service) end(ctx context.Context, id uint64, now time.Time) (*SKUView, error) {
	defer s.cache.Forget(id)
	cur, err := s.skus.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	next := *cur
	if now.Before(cur.EndsAt) {
		if err := s.mendTotals(ctx, cur); err != nil {
			return nil, err
		}
		next.EndsAt = now
		if now.Before(cur.StartsAt) {
			next.StartsAt = now
		}
		// Redis first: from here no buy is accepted, not even one of a
		// batch whose time was read before now (stock.EndedEarly). When
		// Redis has lost the SKU's state, no buy is accepted until it is
		// rebuilt from SQL, which by then holds the end.
		cfg := s.config(&next)
		cfg.Ends = stock.EndedEarly
		if _, err := s.store.Configure(ctx, id, cfg, false); err != nil && !errors.Is(err, stock.ErrStateLost) {
			return nil, err
		}
		if err := s.skus.End(ctx, id, next.StartsAt, next.EndsAt); err != nil {
			return nil, fmt.Errorf("order: end sku %d: %w", id, err)
		}
	}
	n, ok, err := s.store.Left(ctx, next.Layout())
	if err != nil {
		return nil, err
	}
	left := max(0, next.StockTotal-next.Sold)
	if ok {
		left = n
	}
	return s.skuView(&next, left), nil
}

// forgetList makes the next list read the stores.
func (s *Service) forgetList() {
	s.list.mu.Lock()
	s.list.views = nil
	s.list.mu.Unlock()
}
