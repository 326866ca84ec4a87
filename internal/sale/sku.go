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
	"strconv"
	"time"

	"gorm.io/gorm"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/lock"
	"github.com/seckill/seckill/internal/order"
	"github.com/seckill/seckill/internal/room"
	"github.com/seckill/seckill/internal/stock"
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
	Audit(ctx context.Context, sku *catalog.SKU, buyers []string) (*room.Report, error)
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
	// WaitingRoom is the SKU's waiting room, if it has one.
	WaitingRoom *RoomView `json:"waiting_room,omitempty"`
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
		PassTTL: catalog.TTL(r.PassTTL()), Overbook: r.Overbook}
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
	left, ok, err := s.store.Left(ctx, id, sku.Buckets)
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
	return &SKUView{
		ID: sku.ID, Name: sku.Name, PriceCents: sku.PriceCents, Stock: sku.StockTotal, StockTotal: sku.StockTotal,
		StockLeft: left, PerUserLimit: sku.PerUserLimit, StartsAt: sku.StartsAt.UTC(), EndsAt: sku.EndsAt.UTC(),
		State: sku.State(s.o.Now(), left), WaitingRoom: roomView(sku, s.o.Now()),
	}
}

// UpsertSKU creates the SKU spec describes, or changes the one spec.ID
// names as UpdateSKU does (the seeding form: re-running the same spec
// changes nothing). A new SKU needs every catalog.Required field
// (catalog.ErrInvalid naming those missing, nothing written). Errors also:
// those of UpdateSKU but catalog.ErrNotFound.
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
		cur, err := s.skus.Get(ctx, spec.ID)
		if errors.Is(err, catalog.ErrNotFound) {
			view, created, err = s.createSKU(ctx, spec)
			return err
		}
		if err != nil {
			return err
		}
		view, err = s.update(ctx, cur, spec)
		return err
	})
	return view, created, err
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

// createSKU creates a SKU in SQL, then its state in Redis.
func (s *Service) createSKU(ctx context.Context, spec catalog.Spec) (*SeededSKU, bool, error) {
	sku, created, err := s.skus.Upsert(ctx, spec)
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
	return s.seededView(sku, left), created, nil
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
	if err := s.mendTotals(ctx, cur); err != nil {
		return nil, 0, err
	}
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
		if cut && !lost && (errors.Is(err, catalog.ErrBelowSold) || errors.Is(err, catalog.ErrBucketsFixed) ||
			errors.Is(err, catalog.ErrInvalid) || errors.Is(err, catalog.ErrNotFound)) {
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
	if lost || sku.LimitCountsCancelled != cur.LimitCountsCancelled {
		if _, err := s.reconcile(ctx, cur.ID); err != nil {
			return nil, 0, err
		}
		if left, _, err = s.store.Left(ctx, cur.ID, cur.Buckets); err != nil {
			return nil, 0, err
		}
	}
	return sku, left, nil
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
	st, ok, err := s.store.Sum(ctx, sku.ID, sku.Buckets)
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
	m, err := s.locks.Lock(ctx, "sku-admin:"+strconv.FormatUint(sku, 10), 10*time.Second,
		lock.WithWaitTimeout(5*time.Second), lock.WithWatchdog(0))
	if errors.Is(err, lock.ErrNotObtained) {
		return fmt.Errorf("%w: another change of sku %d is running", stock.ErrBusy, sku)
	}
	if err != nil {
		return fmt.Errorf("sale: lock sku %d: %w", sku, err)
	}
	defer func() { _ = m.Unlock(context.WithoutCancel(ctx)) }()
	work, stop := context.WithTimeout(context.WithoutCancel(ctx), changeTimeout)
	defer stop()
	lctx, cancel := m.Context(work)
	defer cancel()
	return f(lctx)
}

// changeTimeout bounds an admin change of a SKU once it has started.
const changeTimeout = 2 * time.Minute

// config is what Redis needs of sku.
func (s *Service) config(sku *catalog.SKU) stock.Config {
	return stock.Config{Total: sku.StockTotal, Limit: sku.PerUserLimit, Buckets: sku.Buckets, Expires: s.stateExpiry(sku), Ends: sku.EndsAt,
		LimitCountsCancelled: sku.LimitCountsCancelled}
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
