// Package sale runs the operations on a sale: seeding a SKU, changing its
// stock, ending it early, showing it to shoppers and admins, auditing its
// invariants across both stores, rebuilding its Redis state from SQL, and
// inspecting its queue's dead letters.
//
// Every change of one SKU's stock in both stores runs under that SKU's admin
// lock, across instances, and writes the two stores in the order that lets a
// failure between them only undersell (a cut lowers Redis first, a top-up
// raises SQL first). A rebuild reads the queue and then one SQL snapshot, so
// an order the drain commits meanwhile is counted once.
package sale

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"gorm.io/gorm"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/order"
	"github.com/seckill/seckill/internal/room"
	"github.com/seckill/seckill/internal/stock"
	"github.com/seckill/seckill/lock"
)

// Options configure a Service.
type Options struct {
	// PaymentTimeout is how long an order waits for payment; zero means
	// order.DefaultPaymentTimeout.
	PaymentTimeout time.Duration
	// StateRetention is how long after a sale's payment window the SKU's
	// Redis state is kept before it expires; default 24h.
	StateRetention time.Duration
	Now            func() time.Time
	Log            *slog.Logger
	// Rooms audits the waiting room of a SKU that has one; nil: not
	// checked.
	Rooms Rooms
	// Orders writes the orders table (a dropped dead letter's orders, as
	// failed); nil: a store of the service's db that writes no events.
	Orders *order.Store
}

// Rooms checks a SKU's waiting room against its buyers (internal/room).
type Rooms interface {
	Audit(ctx context.Context, sku *catalog.SKU, buyers []room.Buyer) (*room.Report, error)
}

// Service runs the operations on sales.
type Service struct {
	db    *gorm.DB
	skus  *catalog.Store
	cache *catalog.Cache
	store *stock.Store
	locks *lock.Client
	o     Options
	list  *listing
}

// NewService returns a Service. locks serialises the changes of one SKU's
// stock and its rebuilds across instances.
func NewService(db *gorm.DB, skus *catalog.Store, cache *catalog.Cache, store *stock.Store, locks *lock.Client, o Options) *Service {
	o.PaymentTimeout = cmp.Or(o.PaymentTimeout, order.DefaultPaymentTimeout)
	o.StateRetention = cmp.Or(o.StateRetention, 24*time.Hour)
	o.Log = cmp.Or(o.Log, slog.Default())
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Orders == nil {
		o.Orders = order.NewStore(db, nil)
	}
	return &Service{db: db, skus: skus, cache: cache, store: store, locks: locks, o: o, list: &listing{}}
}

// SKUView is what shoppers and admins see of a SKU.
type SKUView struct {
	ID         uint64 `json:"id"`
	Name       string `json:"name"`
	PriceCents int64  `json:"price_cents"`
	// Stock is the units put on sale, sold or not.
	Stock int64 `json:"stock"`
	// StockTotal is Stock under its old name, still sent for one release
	// so that clients reading it keep working; read Stock.
	StockTotal   int64     `json:"stock_total"`
	StockLeft    int64     `json:"stock_left"`
	PerUserLimit int       `json:"per_user_limit"`
	StartsAt     time.Time `json:"starts_at"`
	EndsAt       time.Time `json:"ends_at"`
	State        string    `json:"state"`
	// WaitingRoom is the SKU's waiting room, if it has one of its own.
	WaitingRoom *RoomView `json:"waiting_room,omitempty"`
	// Drop is the drop the SKU belongs to, whose waiting room it is sold
	// through; 0, left out: none.
	Drop uint64 `json:"drop,omitempty"`
}

// RoomView is a SKU's waiting room as shoppers see it: its settings, the
// SHA-256 of the draw's seed from the room's opening, and the seed itself
// from the sale's start (random mode).
type RoomView struct {
	OpensAt        time.Time   `json:"opens_at"`
	Mode           string      `json:"mode"`
	AdmitPerSecond int         `json:"admit_per_second"`
	PassTTL        catalog.TTL `json:"pass_ttl"`
	Overbook       float64     `json:"overbook"`
	PowBits        int         `json:"pow_bits"`
	SeedSHA256     string      `json:"seed_sha256,omitempty"`
	Seed           string      `json:"seed,omitempty"`
}

// roomView is sku's room as shoppers see it at now; nil without one.
func roomView(sku *catalog.SKU, now time.Time) *RoomView {
	r := sku.Room
	if !r.On() {
		return nil
	}
	v := &RoomView{OpensAt: r.OpensAt.UTC(), Mode: r.Mode, AdmitPerSecond: r.AdmitPerSecond,
		PassTTL: catalog.TTL(r.PassTTL()), Overbook: r.Overbook, PowBits: r.PowBits}
	if r.Mode == catalog.RoomRandom && !now.Before(*r.OpensAt) {
		v.SeedSHA256 = r.SeedSHA256()
		if !now.Before(sku.StartsAt) {
			v.Seed = r.Seed
		}
	}
	return v
}

// SeededSKU is a SKU as an admin's create or update of it answers: the
// shopper's view, its stock buckets, whether the shop's list leaves it out
// and whether its per-user limit counts cancelled and expired orders, which
// shoppers do not see.
type SeededSKU struct {
	SKUView
	Buckets              int  `json:"buckets"`
	Hidden               bool `json:"hidden"`
	LimitCountsCancelled bool `json:"limit_counts_cancelled"`
}

// SKU returns the SKU as a shopper sees it, with the units left in Redis.
// Errors: catalog.ErrNotFound.
func (s *Service) SKU(ctx context.Context, id uint64) (*SKUView, error) {
	sku, err := s.cache.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	left, ok, err := s.store.Left(ctx, sku.Layout())
	if err != nil {
		return nil, err
	}
	if !ok {
		// Redis lost the SKU; SQL knows at least what is persisted.
		left = max(0, sku.StockTotal-sku.Sold)
	}
	return s.skuView(sku, left), nil
}

func (s *Service) skuView(sku *catalog.SKU, left int64) *SKUView {
	v := &SKUView{
		ID: sku.ID, Name: sku.Name, PriceCents: sku.PriceCents, Stock: sku.StockTotal, StockTotal: sku.StockTotal,
		StockLeft: left, PerUserLimit: sku.PerUserLimit, StartsAt: sku.StartsAt.UTC(), EndsAt: sku.EndsAt.UTC(),
		State: sku.State(s.o.Now(), left), Drop: sku.Drop,
	}
	if sku.Drop == 0 { // a drop's room is shown with the drop
		v.WaitingRoom = roomView(sku, s.o.Now())
	}
	return v
}

// UpsertSKU creates the SKU spec describes, or changes the one spec.ID
// names as UpdateSKU does (the seeding form: re-running the same spec
// changes nothing). A new SKU needs every catalog.Required field
// (catalog.ErrInvalid naming those missing, nothing written). It reports
// whether spec created the SKU: when a create without an id takes spec.ID
// meanwhile, spec changes that SKU, as it would have one after the other.
// Errors also: those of UpdateSKU but catalog.ErrNotFound.
func (s *Service) UpsertSKU(ctx context.Context, spec catalog.Spec) (*SeededSKU, bool, error) {
	if err := spec.Validate(); err != nil {
		return nil, false, err
	}
	if spec.ID == 0 {
		return s.createSKU(ctx, spec)
	}
	var view *SeededSKU
	created := false
	err := s.exclusive(ctx, spec.ID, func(ctx context.Context) error {
		for try := 1; ; try++ {
			cur, err := s.skus.Get(ctx, spec.ID)
			if err == nil {
				view, err = s.update(ctx, cur, spec)
				return err
			}
			if !errors.Is(err, catalog.ErrNotFound) {
				return err
			}
			sku, err := s.skus.Create(ctx, spec)
			if errors.Is(err, catalog.ErrIDTaken) && try < idTries {
				continue // a create without an id took it: spec changes that SKU
			}
			if err != nil {
				return taken(err)
			}
			view, created = s.configureNew(ctx, sku), true
			return nil
		}
	})
	return view, created, err
}

// idTries bounds the writes of a new SKU whose id a concurrent create takes
// each time; after them the caller is answered busy (taken).
const idTries = 3

// taken is err, the last of idTries writes, as the caller is answered: a
// new SKU's id taken again and again is stock.ErrBusy (retry shortly).
func taken(err error) error {
	if errors.Is(err, catalog.ErrIDTaken) {
		return fmt.Errorf("%w: %w", stock.ErrBusy, err)
	}
	return err
}

// UpdateSKU changes SKU id's fields that spec gives and keeps the others,
// in SQL and in Redis (see change). A stock below what is sold (in SQL) or
// taken (in Redis) is refused with catalog.ErrBelowSold, a bucket count
// other than the SKU's with catalog.ErrBucketsFixed, a field out of range,
// a window that would not end after it starts or an id other than id with
// catalog.ErrInvalid; each changes nothing. An existing SKU Redis has lost
// is rebuilt from SQL, never created afresh. Errors also:
// catalog.ErrNotFound, stock.ErrBusy.
func (s *Service) UpdateSKU(ctx context.Context, id uint64, spec catalog.Spec) (*SeededSKU, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	var view *SeededSKU
	err := s.exclusive(ctx, id, func(ctx context.Context) error {
		cur, err := s.skus.Get(ctx, id)
		if err != nil {
			return err
		}
		view, err = s.update(ctx, cur, spec)
		return err
	})
	return view, err
}

// update changes cur as spec says. Run it under exclusive.
func (s *Service) update(ctx context.Context, cur *catalog.SKU, spec catalog.Spec) (*SeededSKU, error) {
	// Checked before a cut lowers Redis: a refused change writes nothing.
	next, err := spec.Apply(*cur, s.o.Now())
	if err != nil {
		return nil, err
	}
	sku, left, err := s.change(ctx, cur, s.config(&next), func(ctx context.Context) (*catalog.SKU, error) {
		return s.skus.Update(ctx, cur.ID, spec)
	})
	if err != nil {
		return nil, err
	}
	return s.seededView(sku, left), nil
}

func (s *Service) seededView(sku *catalog.SKU, left int64) *SeededSKU {
	return &SeededSKU{SKUView: *s.skuView(sku, left), Buckets: sku.Buckets, Hidden: sku.Hidden,
		LimitCountsCancelled: sku.LimitCountsCancelled}
}

// createSKU creates a SKU without an id in SQL, then its state in Redis
// (configureNew, under the new SKU's admin lock).
func (s *Service) createSKU(ctx context.Context, spec catalog.Spec) (*SeededSKU, bool, error) {
	var sku *catalog.SKU
	for try := 1; ; try++ {
		var err error
		sku, err = s.skus.Create(ctx, spec)
		if errors.Is(err, catalog.ErrIDTaken) && try < idTries {
			continue // a create with that id came first: the database gives the next
		}
		if err != nil {
			return nil, false, taken(err)
		}
		break
	}
	return s.configureLocked(ctx, sku), true, nil
}

// configureLocked is configureNew under the admin lock of sku, just created
// in SQL. Without the lock (another change of the SKU holds it, or Redis
// does not answer) it answers with the SKU as created: the change that
// holds it configures Redis from SQL, and otherwise the first buyer does
// (see configureNew).
func (s *Service) configureLocked(ctx context.Context, sku *catalog.SKU) *SeededSKU {
	var view *SeededSKU
	err := s.exclusive(ctx, sku.ID, func(ctx context.Context) error {
		view = s.configureNew(ctx, sku)
		return nil
	})
	if err != nil {
		s.o.Log.Warn("redis state of a new sku not configured: its first buyer rebuilds it from sql", "sku", sku.ID, "err", err)
		s.cache.Forget(sku.ID)
		return s.seededView(sku, sku.StockTotal)
	}
	return view
}

// configureNew configures the Redis state of sku, just created in SQL, as
// SQL holds it now (a change by id may have followed the create), and
// returns its view. Run it under exclusive. A SKU new in SQL has no units
// taken anywhere, so a failure here is left to its first buyer, whose
// stock.ErrStateLost rebuilds the state from SQL: the SKU exists, and its
// answer says so.
func (s *Service) configureNew(ctx context.Context, sku *catalog.SKU) *SeededSKU {
	defer s.cache.Forget(sku.ID)
	if now, err := s.skus.Get(ctx, sku.ID); err == nil {
		sku = now
	}
	left, err := s.store.Configure(ctx, sku.ID, s.config(sku), true)
	if err != nil {
		s.o.Log.Warn("redis state of a new sku not configured: its first buyer rebuilds it from sql", "sku", sku.ID, "err", err)
		left = sku.StockTotal - sku.Sold
	}
	return s.seededView(sku, left)
}

// SetStock sets a SKU's stock (a top-up or a cut): UpdateSKU with the
// stock alone.
func (s *Service) SetStock(ctx context.Context, id uint64, stock int64) (*SKUView, error) {
	v, err := s.UpdateSKU(ctx, id, catalog.Spec{Stock: &stock})
	if err != nil {
		return nil, err
	}
	return &v.SKUView, nil
}

// config is what Redis needs of sku.
func (s *Service) config(sku *catalog.SKU) stock.Config {
	return stock.Config{Total: sku.StockTotal, Limit: sku.PerUserLimit, Buckets: sku.Buckets, Drop: sku.Drop, Expires: s.stateExpiry(sku),
		Ends: sku.EndsAt, LimitCountsCancelled: sku.LimitCountsCancelled}
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
