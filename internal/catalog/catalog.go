// Package catalog keeps the sale inventory: one SKU per item on sale, with
// its price, total stock, units sold, per-user limit and sale window. MySQL
// (or the embedded SQLite) is the source of truth; Cache keeps recent SKUs
// in process memory so the buy path validates a request without a round trip.
package catalog

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Errors.
var (
	ErrNotFound  = errors.New("unknown sku")
	ErrInvalid   = errors.New("invalid sku")
	ErrBelowSold = errors.New("stock below the units already sold")
	// ErrBucketsFixed: a change asked for another bucket count than the
	// SKU was created with. The count names the hash tags its Redis stock
	// lives under, so it cannot change while the SKU exists.
	ErrBucketsFixed = errors.New("a sku's stock buckets are fixed when it is created")
)

// MaxID is the largest SKU id: ids run from 1 to MaxID, the range of a
// signed 64-bit integer, which MySQL's BIGINT UNSIGNED and SQLite's INTEGER
// both hold.
const MaxID = math.MaxInt64

// ValidID reports whether id is a SKU id a SKU can have: 1 to MaxID.
func ValidID(id uint64) bool { return id >= 1 && id <= MaxID }

var errNoIDLeft = fmt.Errorf("%w: no id left after the largest used (%d); give the SKU an id", ErrInvalid, uint64(MaxID))

// Limits on what an admin may seed.
const (
	MaxStock        = 1_000_000_000
	MaxPerUserLimit = 1000
	MaxPriceCents   = 1_000_000_000_00
	MaxNameLen      = 200
	MaxBuckets      = 64
)

// SKU is one item on sale: the row of table skus.
type SKU struct {
	ID           uint64 `gorm:"column:id;primaryKey;autoIncrement"`
	Name         string `gorm:"column:name"`
	PriceCents   int64  `gorm:"column:price_cents"`
	StockTotal   int64  `gorm:"column:stock_total"`
	Sold         int64  `gorm:"column:sold"`
	PerUserLimit int    `gorm:"column:per_user_limit"`
	Buckets      int    `gorm:"column:buckets"`
	Hidden       bool   `gorm:"column:hidden"` // on sale, but left out of the shop's list
	// LimitCountsCancelled: PerUserLimit counts the units of the shopper's
	// cancelled and expired orders too (N ever taken), not only those they
	// hold.
	LimitCountsCancelled bool      `gorm:"column:limit_counts_cancelled"`
	StartsAt             time.Time `gorm:"column:starts_at"`
	EndsAt               time.Time `gorm:"column:ends_at"`
	CreatedAt            time.Time `gorm:"column:created_at"`
	UpdatedAt            time.Time `gorm:"column:updated_at"`
	// Room is the SKU's waiting room, if it has one (Room.On).
	Room Room `gorm:"embedded"`
}

// TableName is skus.
func (SKU) TableName() string { return "skus" }

// Window states.
const (
	Upcoming = "upcoming"
	Live     = "live"
	SoldOut  = "sold_out"
	Ended    = "ended"
)

// State is the SKU's state at now given the units left.
func (s *SKU) State(now time.Time, left int64) string {
	switch {
	case now.Before(s.StartsAt):
		return Upcoming
	case !now.Before(s.EndsAt):
		return Ended
	case left <= 0:
		return SoldOut
	default:
		return Live
	}
}

// CheckBuckets reports whether a change asking for asked buckets fits the
// SKU: 0 (not given) and the SKU's own count do; any other count is
// refused with ErrBucketsFixed, naming both counts.
func (s *SKU) CheckBuckets(asked int) error {
	if asked != 0 && asked != s.Buckets {
		return fmt.Errorf("%w: sku %d has %d, asked for %d", ErrBucketsFixed, s.ID, s.Buckets, asked)
	}
	return nil
}

// Spec is what an admin gives to create a SKU or to change one. A nil
// field is not given: a new SKU needs every field but ID and Buckets (see
// Required; there is no default price, stock, limit or window), and a
// change keeps what it does not give (Apply). ID 0 lets the database choose
// a new SKU's id; a given ID makes seeding idempotent. Buckets 0 is not
// given: a new SKU gets 1 bucket, an existing one keeps its count.
//
// An optional field added later is a pointer too, nil meaning "not given":
// a default for a new SKU, "keep" for a change. Its JSON form is the body
// of POST /admin/skus, a field not given left out; its YAML form is an item
// of a seed file.
type Spec struct {
	ID           uint64     `json:"id,omitempty" yaml:"id"`
	Name         *string    `json:"name,omitempty" yaml:"name"`
	PriceCents   *int64     `json:"price_cents,omitempty" yaml:"price_cents"`
	Stock        *int64     `json:"stock,omitempty" yaml:"stock"`
	PerUserLimit *int       `json:"per_user_limit,omitempty" yaml:"per_user_limit"`
	Buckets      int        `json:"buckets,omitempty" yaml:"buckets"`
	StartsAt     *time.Time `json:"starts_at,omitempty" yaml:"starts_at"`
	EndsAt       *time.Time `json:"ends_at,omitempty" yaml:"ends_at"`
	// Hidden leaves the SKU out of the shop's list (a load test's); not
	// given, a new SKU is listed.
	Hidden *bool `json:"hidden,omitempty" yaml:"hidden"`
	// LimitCountsCancelled says whether the per-user limit counts the
	// units of the shopper's cancelled and expired orders: true, a shopper
	// who cancels cannot buy again past the limit; false, a cancel or an
	// expiry gives their count back. Not given, a new SKU counts them.
	LimitCountsCancelled *bool `json:"limit_counts_cancelled,omitempty" yaml:"limit_counts_cancelled"`
	// WaitingRoom gives the SKU a waiting room: only at its creation (a
	// change may give the same room again, as a seed file given twice
	// does, but no other).
	WaitingRoom *RoomSpec `json:"waiting_room,omitempty" yaml:"waiting_room"`
}

// Required names the fields a new SKU must be given, in the order Missing
// reports them: none has a default that is safe for a sale (an absent price
// is not a free sale, an absent start is not "now").
var Required = []string{"name", "price_cents", "stock", "per_user_limit", "starts_at", "ends_at"}

// Missing returns the names of the Required fields s does not give.
func (s *Spec) Missing() []string {
	given := []bool{s.Name != nil, s.PriceCents != nil, s.Stock != nil, s.PerUserLimit != nil, s.StartsAt != nil, s.EndsAt != nil}
	var out []string
	for i, ok := range given {
		if !ok {
			out = append(out, Required[i])
		}
	}
	return out
}

// Validate reports the first given field out of range, wrapping ErrInvalid;
// a field not given is not checked (Missing and Apply see to it). It trims
// the name of surrounding white space.
func (s *Spec) Validate() error {
	switch {
	case s.ID > MaxID:
		return invalidf("id must be from 1 to %d (or left out)", uint64(MaxID))
	case s.PriceCents != nil && (*s.PriceCents < 0 || *s.PriceCents > MaxPriceCents):
		return invalidf("price_cents must be from 0 to %d", int64(MaxPriceCents))
	case s.Stock != nil && (*s.Stock < 0 || *s.Stock > MaxStock):
		return invalidf("stock must be from 0 to %d", MaxStock)
	case s.PerUserLimit != nil && (*s.PerUserLimit < 1 || *s.PerUserLimit > MaxPerUserLimit):
		return invalidf("per_user_limit must be from 1 to %d", MaxPerUserLimit)
	case s.Buckets < 0 || s.Buckets > MaxBuckets:
		return invalidf("buckets must be from 1 to %d", MaxBuckets)
	case s.StartsAt != nil && (s.StartsAt.Year() < 2000 || s.StartsAt.Year() > 9000):
		return invalidf("starts_at must be in the years 2000 to 9000")
	case s.EndsAt != nil && (s.EndsAt.Year() < 2000 || s.EndsAt.Year() > 9000):
		return invalidf("ends_at must be in the years 2000 to 9000")
	case s.StartsAt != nil && s.EndsAt != nil && !s.EndsAt.After(*s.StartsAt):
		return invalidf("ends_at must be after starts_at")
	}
	if r := s.WaitingRoom; r != nil {
		if err := r.validate(); err != nil {
			return err
		}
		if s.Buckets > 1 {
			return invalidf("a sku with a waiting_room has 1 bucket: the room admits buyers at a rate one bucket takes")
		}
		if s.StartsAt != nil && r.OpensAt.After(*s.StartsAt) {
			return invalidf("waiting_room.opens_at must be at or before starts_at")
		}
	}
	if s.Name != nil {
		name := strings.TrimSpace(*s.Name)
		if name == "" || utf8.RuneCountInString(name) > MaxNameLen || !utf8.ValidString(name) {
			return invalidf("name must be 1 to %d characters", MaxNameLen)
		}
		s.Name = &name
	}
	return nil
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// New returns the SKU s creates, created at now: ErrInvalid naming every
// Required field s does not give, or the first one out of range.
func (s *Spec) New(now time.Time) (SKU, error) {
	if err := s.Validate(); err != nil {
		return SKU{}, err
	}
	if missing := s.Missing(); len(missing) > 0 {
		return SKU{}, invalidf("a new sku needs %s (an absent field is not 0: give price_cents 0 for a free sale)",
			strings.Join(missing, ", "))
	}
	now = now.UTC()
	sku := SKU{
		ID: s.ID, Name: *s.Name, PriceCents: *s.PriceCents, StockTotal: *s.Stock, PerUserLimit: *s.PerUserLimit,
		Buckets: max(s.Buckets, 1), Hidden: s.Hidden != nil && *s.Hidden,
		LimitCountsCancelled: s.LimitCountsCancelled == nil || *s.LimitCountsCancelled,
		StartsAt:             s.StartsAt.UTC(), EndsAt: s.EndsAt.UTC(), CreatedAt: now, UpdatedAt: now,
	}
	if s.WaitingRoom != nil {
		room, err := s.WaitingRoom.room()
		if err != nil {
			return SKU{}, err
		}
		sku.Room = room
	}
	return sku, nil
}

// Apply returns cur changed by s: the fields s gives, the others as they
// are. It refuses, changing nothing, a field out of range or an ID other
// than cur's (ErrInvalid), a window it moves that would not end after it
// starts (ErrInvalid), a bucket count other than cur's (ErrBucketsFixed) and a
// stock below what cur has sold (ErrBelowSold).
func (s *Spec) Apply(cur SKU) (SKU, error) {
	if err := s.Validate(); err != nil {
		return SKU{}, err
	}
	if s.ID != 0 && s.ID != cur.ID {
		return SKU{}, invalidf("id %d is not the sku's own (%d)", s.ID, cur.ID)
	}
	if err := cur.CheckBuckets(s.Buckets); err != nil {
		return SKU{}, err
	}
	if s.WaitingRoom != nil && !s.WaitingRoom.same(cur.Room) {
		return SKU{}, invalidf("waiting_room is given when a sku is created, and cannot change")
	}
	next := cur
	if s.Name != nil {
		next.Name = *s.Name
	}
	if s.PriceCents != nil {
		next.PriceCents = *s.PriceCents
	}
	if s.Stock != nil {
		next.StockTotal = *s.Stock
	}
	if s.PerUserLimit != nil {
		next.PerUserLimit = *s.PerUserLimit
	}
	if s.StartsAt != nil {
		next.StartsAt = s.StartsAt.UTC()
	}
	if s.EndsAt != nil {
		next.EndsAt = s.EndsAt.UTC()
	}
	if s.Hidden != nil {
		next.Hidden = *s.Hidden
	}
	if s.LimitCountsCancelled != nil {
		next.LimitCountsCancelled = *s.LimitCountsCancelled
	}
	// The window is judged when s moves it: a sale ended before it started
	// (EndSale) keeps a window of no length, before its room's opening,
	// and its other fields may still change.
	moved := s.StartsAt != nil || s.EndsAt != nil
	if moved && !next.EndsAt.After(next.StartsAt) {
		return SKU{}, invalidf("ends_at must be after starts_at: the sale would run from %s to %s",
			next.StartsAt.Format(time.RFC3339), next.EndsAt.Format(time.RFC3339))
	}
	if moved && next.Room.On() && next.Room.OpensAt.After(next.StartsAt) {
		return SKU{}, invalidf("starts_at must be at or after the waiting room's opens_at (%s)", next.Room.OpensAt.Format(time.RFC3339))
	}
	if next.StockTotal < cur.Sold {
		return SKU{}, fmt.Errorf("%w: %d sold, asked for %d", ErrBelowSold, cur.Sold, next.StockTotal)
	}
	return next, nil
}

// columns are the columns of table skus that s changes, with their values.
func (s *Spec) columns() map[string]any {
	cols := map[string]any{}
	if s.Name != nil {
		cols["name"] = *s.Name
	}
	if s.PriceCents != nil {
		cols["price_cents"] = *s.PriceCents
	}
	if s.Stock != nil {
		cols["stock_total"] = *s.Stock
	}
	if s.PerUserLimit != nil {
		cols["per_user_limit"] = *s.PerUserLimit
	}
	if s.StartsAt != nil {
		cols["starts_at"] = s.StartsAt.UTC()
	}
	if s.EndsAt != nil {
		cols["ends_at"] = s.EndsAt.UTC()
	}
	if s.Hidden != nil {
		cols["hidden"] = *s.Hidden
	}
	if s.LimitCountsCancelled != nil {
		cols["limit_counts_cancelled"] = *s.LimitCountsCancelled
	}
	return cols
}

// Store reads and writes SKUs in SQL.
type Store struct {
	db  *gorm.DB
	now func() time.Time
}

// NewStore returns a store on db.
func NewStore(db *gorm.DB, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{db: db, now: now}
}

// Get returns the SKU or ErrNotFound.
func (s *Store) Get(ctx context.Context, id uint64) (*SKU, error) {
	if !ValidID(id) {
		return nil, fmt.Errorf("%w: %d", ErrNotFound, id)
	}
	var sku SKU
	err := s.db.WithContext(ctx).Take(&sku, "id = ?", id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, fmt.Errorf("%w: %d", ErrNotFound, id)
	}
	if err != nil {
		return nil, fmt.Errorf("catalog: get %d: %w", id, err)
	}
	return &sku, nil
}

// List returns the SKUs whose sale ended after since, by id.
func (s *Store) List(ctx context.Context, since time.Time) ([]SKU, error) {
	var skus []SKU
	err := s.db.WithContext(ctx).Where("ends_at > ?", since.UTC()).Order("id").Find(&skus).Error
	if err != nil {
		return nil, fmt.Errorf("catalog: list: %w", err)
	}
	return skus, nil
}

// Page returns up to limit SKUs with ids above after, by id.
func (s *Store) Page(ctx context.Context, after uint64, limit int) ([]SKU, error) {
	var skus []SKU
	err := s.db.WithContext(ctx).Where("id > ?", after).Order("id").Limit(limit).Find(&skus).Error
	if err != nil {
		return nil, fmt.Errorf("catalog: page: %w", err)
	}
	return skus, nil
}

// End sets the sale window of SKU id to end at at (and to start there too
// when it had not started yet). ErrNotFound when there is no such SKU.
func (s *Store) End(ctx context.Context, id uint64, startsAt, at time.Time) error {
	res := s.db.WithContext(ctx).Model(&SKU{}).Where("id = ?", id).
		Updates(map[string]any{"starts_at": startsAt.UTC(), "ends_at": at.UTC(), "updated_at": s.now().UTC()})
	if res.Error != nil {
		return fmt.Errorf("catalog: end %d: %w", id, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("%w: %d", ErrNotFound, id)
	}
	return nil
}

// Upsert creates the SKU spec describes, or, when spec.ID names an
// existing one, changes it as Update does. A new SKU needs every Required
// field (ErrInvalid naming those missing) and gets spec.Buckets buckets (1
// when not given). It returns the stored SKU and whether it was created.
func (s *Store) Upsert(ctx context.Context, spec Spec) (_ *SKU, created bool, err error) {
	if err := spec.Validate(); err != nil {
		return nil, false, err
	}
	now := s.now().UTC()
	var out *SKU
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if spec.ID != 0 {
			cur, e := lockSKU(tx, spec.ID)
			if e == nil {
				out, e = update(tx, cur, spec, now)
				return e
			}
			if !errors.Is(e, ErrNotFound) {
				return e
			}
		}
		sku, e := spec.New(now)
		if e != nil {
			return e
		}
		// Without an id the database takes the one after the largest used:
		// once MaxID is used there is none left in range (SQLite refuses
		// the insert, MySQL would go past MaxID).
		if spec.ID == 0 {
			var top uint64
			if e := tx.Model(&SKU{}).Select("COALESCE(MAX(id), 0)").Scan(&top).Error; e != nil {
				return e
			}
			if top >= MaxID {
				return errNoIDLeft
			}
		}
		if e := tx.Create(&sku).Error; e != nil {
			return e
		}
		if !ValidID(sku.ID) {
			return errNoIDLeft
		}
		out, created = &sku, true
		return nil
	})
	if err != nil {
		return nil, false, wrapWrite("upsert", err)
	}
	return out, created, nil
}

// Update changes SKU id as spec says (see Spec.Apply): only the fields spec
// gives are written, in one transaction holding the SKU's row. Errors:
// ErrNotFound, ErrInvalid, ErrBucketsFixed, ErrBelowSold, each writing
// nothing.
func (s *Store) Update(ctx context.Context, id uint64, spec Spec) (*SKU, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if !ValidID(id) {
		return nil, fmt.Errorf("%w: %d", ErrNotFound, id)
	}
	var out *SKU
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		cur, e := lockSKU(tx, id)
		if e != nil {
			return e
		}
		out, e = update(tx, cur, spec, s.now().UTC())
		return e
	})
	if err != nil {
		return nil, wrapWrite("update", err)
	}
	return out, nil
}

// lockSKU reads SKU id in tx, holding its row until tx ends: ErrNotFound
// when there is none.
func lockSKU(tx *gorm.DB, id uint64) (*SKU, error) {
	var cur SKU
	err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Take(&cur, "id = ?", id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, fmt.Errorf("%w: %d", ErrNotFound, id)
	}
	return &cur, err
}

// update writes the columns spec changes of cur, a row tx holds, and
// returns the row as stored.
func update(tx *gorm.DB, cur *SKU, spec Spec, now time.Time) (*SKU, error) {
	if _, err := spec.Apply(*cur); err != nil {
		return nil, err
	}
	cols := spec.columns()
	cols["updated_at"] = now
	if err := tx.Model(&SKU{}).Where("id = ?", cur.ID).Updates(cols).Error; err != nil {
		return nil, err
	}
	var out SKU
	if err := tx.Take(&out, "id = ?", cur.ID).Error; err != nil {
		return nil, err
	}
	return &out, nil
}

// wrapWrite passes the store's sentinels through as they are and names the
// operation of any other error.
func wrapWrite(op string, err error) error {
	if errors.Is(err, ErrBelowSold) || errors.Is(err, ErrBucketsFixed) || errors.Is(err, ErrInvalid) || errors.Is(err, ErrNotFound) {
		return err
	}
	return fmt.Errorf("catalog: %s: %w", op, err)
}
