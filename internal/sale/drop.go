package sale

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/stock"
)

// DropView is what shoppers and admins see of a drop: its SKUs with the
// units left of each, and its waiting room.
type DropView struct {
	ID           uint64    `json:"id"`
	Name         string    `json:"name"`
	PerUserLimit int       `json:"per_user_limit"`
	StartsAt     time.Time `json:"starts_at"`
	EndsAt       time.Time `json:"ends_at"`
	// State is the drop's as a whole: sold_out once every SKU is.
	State       string    `json:"state"`
	StockLeft   int64     `json:"stock_left"`
	SKUs        []SKUView `json:"skus"`
	WaitingRoom *RoomView `json:"waiting_room"`
}

// CreateDrop creates the drop spec describes (catalog.Store.CreateDrop),
// under the admin locks of its SKUs, and then keeps each SKU's Redis state
// under the drop's hash tag (stock.Part), where one script spends a pass
// of the drop's room with any of its SKUs' units: every SKU but the first
// is configured there anew with all its units (none is sold before the
// sale starts, which a drop's SKUs have not), and its state under its own
// tag is left with none, so that an instance whose catalog has not yet
// seen the drop sells nothing from it. The same spec again answers the
// drop, created false, and configures what a call stopped part-way left
// undone. Errors: those of catalog.Store.CreateDrop, stock.ErrBusy.
func (s *Service) CreateDrop(ctx context.Context, spec catalog.DropSpec) (*DropView, bool, error) {
	if err := spec.Validate(); err != nil {
		return nil, false, err
	}
	var view *DropView
	var created bool
	err := s.exclusiveAll(ctx, spec.SKUs, func(ctx context.Context) error {
		d, skus, c, err := s.skus.CreateDrop(ctx, spec)
		if err != nil {
			return err
		}
		created = c
		for i := range skus {
			s.cache.Forget(skus[i].ID)
		}
		if err := s.moveToDrop(ctx, skus); err != nil {
			return err
		}
		view, err = s.dropView(ctx, d, skus)
		return err
	})
	return view, created, err
}

// moveToDrop configures the Redis state of the SKUs of a new drop under
// its tag (see CreateDrop). Run it under the SKUs' admin locks.
func (s *Service) moveToDrop(ctx context.Context, skus []catalog.SKU) error {
	if !s.o.Now().Before(skus[0].StartsAt) {
		return nil // on sale: a state missing now is rebuilt from SQL
	}
	for i := range skus[1:] {
		sku := &skus[i+1]
		if _, ok, err := s.store.Sum(ctx, sku.Layout()); err != nil {
			return err
		} else if !ok {
			if _, err := s.store.Configure(ctx, sku.ID, s.config(sku), true); err != nil {
				return err
			}
		}
		old := s.config(sku)
		old.Drop, old.Total = 0, 0
		if _, err := s.store.Configure(ctx, sku.ID, old, false); err != nil && !errors.Is(err, stock.ErrStateLost) {
			return fmt.Errorf("sale: sku %d's state under its own tag: %w", sku.ID, err)
		}
	}
	return nil
}

// Drop returns the drop with id as shoppers see it, with the units left of
// each SKU in Redis. Errors: catalog.ErrDropNotFound.
func (s *Service) Drop(ctx context.Context, id uint64) (*DropView, error) {
	if err := s.IsDrop(ctx, id); err != nil {
		return nil, err
	}
	lead, err := s.cache.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	skus := make([]catalog.SKU, 0, len(lead.Group.SKUs))
	for _, sid := range lead.Group.SKUs {
		sku, err := s.cache.Get(ctx, sid)
		if err != nil {
			return nil, err
		}
		skus = append(skus, *sku)
	}
	return s.dropView(ctx, lead.Group, skus)
}

// IsDrop is nil when id is a drop's: catalog.ErrDropNotFound otherwise.
func (s *Service) IsDrop(ctx context.Context, id uint64) error {
	lead, err := s.cache.Get(ctx, id)
	if errors.Is(err, catalog.ErrNotFound) || err == nil && lead.Group == nil {
		return fmt.Errorf("%w: %d", catalog.ErrDropNotFound, id)
	}
	return err
}

// dropView is drop d of skus, its first first, with the units left of each
// in Redis (or, for one Redis has lost, those SQL has not sold).
func (s *Service) dropView(ctx context.Context, d *catalog.Drop, skus []catalog.SKU) (*DropView, error) {
	now := s.o.Now()
	lead := &skus[0]
	v := &DropView{ID: d.ID, Name: d.Name, PerUserLimit: d.PerUserLimit, StartsAt: lead.StartsAt.UTC(), EndsAt: lead.EndsAt.UTC(),
		SKUs: make([]SKUView, 0, len(skus)), WaitingRoom: roomView(lead, now)}
	for i := range skus {
		left, ok, err := s.store.Left(ctx, skus[i].Layout())
		if err != nil {
			return nil, err
		}
		if !ok {
			left = max(0, skus[i].StockTotal-skus[i].Sold)
		}
		v.StockLeft += left
		v.SKUs = append(v.SKUs, *s.skuView(&skus[i], left))
	}
	v.State = lead.State(now, v.StockLeft)
	return v, nil
}
