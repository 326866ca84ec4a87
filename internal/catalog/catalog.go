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
	ErrBelowSold = errors.New("stock_total below units already sold")
	// ErrBucketsFixed: an update asked for another bucket count than the
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
	ID           uint64    `gorm:"column:id;primaryKey;autoIncrement"`
	Name         string    `gorm:"column:name"`
	PriceCents   int64     `gorm:"column:price_cents"`
	StockTotal   int64     `gorm:"column:stock_total"`
	Sold         int64     `gorm:"column:sold"`
	PerUserLimit int       `gorm:"column:per_user_limit"`
	Buckets      int       `gorm:"column:buckets"`
	StartsAt     time.Time `gorm:"column:starts_at"`
	EndsAt       time.Time `gorm:"column:ends_at"`
	CreatedAt    time.Time `gorm:"column:created_at"`
	UpdatedAt    time.Time `gorm:"column:updated_at"`
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

// CheckBuckets reports whether an update asking for asked buckets fits the
// SKU: 0 (not given) and the SKU's own count do; any other count is
// refused with ErrBucketsFixed, naming both counts.
func (s *SKU) CheckBuckets(asked int) error {
	if asked != 0 && asked != s.Buckets {
		return fmt.Errorf("%w: sku %d has %d, asked for %d", ErrBucketsFixed, s.ID, s.Buckets, asked)
	}
	return nil
}

// Spec is what an admin gives to create or update a SKU. ID 0 lets the
// database choose; a given ID makes seeding idempotent. Buckets 0 means
// not given: a new SKU gets 1 bucket, an existing one keeps its count.
type Spec struct {
	ID           uint64    `json:"id,omitempty" yaml:"id"`
	Name         string    `json:"name" yaml:"name"`
	PriceCents   int64     `json:"price_cents" yaml:"price_cents"`
	Stock        int64     `json:"stock" yaml:"stock"`
	PerUserLimit int       `json:"per_user_limit" yaml:"per_user_limit"`
	Buckets      int       `json:"buckets,omitempty" yaml:"buckets"`
	StartsAt     time.Time `json:"starts_at" yaml:"starts_at"`
	EndsAt       time.Time `json:"ends_at" yaml:"ends_at"`
}

// Validate reports the first field out of range, wrapping ErrInvalid.
func (s *Spec) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
	}
	name := strings.TrimSpace(s.Name)
	switch {
	case s.ID > MaxID:
		return bad("id must be from 1 to %d (or left out)", uint64(MaxID))
	case name == "" || utf8.RuneCountInString(name) > MaxNameLen || !utf8.ValidString(name):
		return bad("name must be 1 to %d characters", MaxNameLen)
	case s.PriceCents < 0 || s.PriceCents > MaxPriceCents:
		return bad("price_cents must be from 0 to %d", int64(MaxPriceCents))
	case s.Stock < 0 || s.Stock > MaxStock:
		return bad("stock must be from 0 to %d", MaxStock)
	case s.PerUserLimit < 1 || s.PerUserLimit > MaxPerUserLimit:
		return bad("per_user_limit must be from 1 to %d", MaxPerUserLimit)
	case s.Buckets < 0 || s.Buckets > MaxBuckets:
		return bad("buckets must be from 1 to %d", MaxBuckets)
	case s.StartsAt.IsZero() || s.EndsAt.IsZero():
		return bad("starts_at and ends_at are required (RFC 3339)")
	case !s.EndsAt.After(s.StartsAt):
		return bad("ends_at must be after starts_at")
	case s.StartsAt.Year() < 2000 || s.EndsAt.Year() > 9000:
		return bad("sale window out of range")
	}
	s.Name = name
	return nil
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

// Upsert creates the SKU, or, when spec.ID names an existing one, updates its
// name, price, limit, window and stock_total (never below what is sold:
// ErrBelowSold). A new SKU gets spec.Buckets buckets (1 when not given); an
// existing one keeps its count, and a spec asking for another is refused
// with ErrBucketsFixed, writing nothing. It returns the stored SKU, whether
// it was created, and its previous stock_total (0 when created).
func (s *Store) Upsert(ctx context.Context, spec Spec) (_ *SKU, created bool, prevTotal int64, err error) {
	if err := spec.Validate(); err != nil {
		return nil, false, 0, err
	}
	now := s.now().UTC()
	var out SKU
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var cur SKU
		if spec.ID != 0 {
			e := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Take(&cur, "id = ?", spec.ID).Error
			if e == nil {
				if e = cur.CheckBuckets(spec.Buckets); e != nil {
					return e
				}
				if spec.Stock < cur.Sold {
					return fmt.Errorf("%w: %d sold, asked for %d", ErrBelowSold, cur.Sold, spec.Stock)
				}
				prevTotal = cur.StockTotal
				e = tx.Model(&SKU{}).Where("id = ?", spec.ID).Updates(map[string]any{
					"name": spec.Name, "price_cents": spec.PriceCents, "stock_total": spec.Stock,
					"per_user_limit": spec.PerUserLimit, "starts_at": spec.StartsAt.UTC(),
					"ends_at": spec.EndsAt.UTC(), "updated_at": now,
				}).Error
				if e != nil {
					return e
				}
				if e = tx.Take(&cur, "id = ?", spec.ID).Error; e == nil {
					out = cur
				}
				return e
			}
			if !errors.Is(e, gorm.ErrRecordNotFound) {
				return e
			}
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
		cur = SKU{
			ID: spec.ID, Name: spec.Name, PriceCents: spec.PriceCents, StockTotal: spec.Stock,
			PerUserLimit: spec.PerUserLimit, Buckets: max(spec.Buckets, 1),
			StartsAt: spec.StartsAt.UTC(), EndsAt: spec.EndsAt.UTC(), CreatedAt: now, UpdatedAt: now,
		}
		created = true
		if e := tx.Create(&cur).Error; e != nil {
			return e
		}
		if !ValidID(cur.ID) {
			return errNoIDLeft
		}
		out = cur
		return nil
	})
	if err != nil {
		if errors.Is(err, ErrBelowSold) || errors.Is(err, ErrBucketsFixed) || errors.Is(err, ErrInvalid) {
			return nil, false, 0, err
		}
		return nil, false, 0, fmt.Errorf("catalog: upsert: %w", err)
	}
	return &out, created, prevTotal, nil
}

// SetStockTotal sets stock_total, refusing a value below sold with
// ErrBelowSold. It returns the previous total.
func (s *Store) SetStockTotal(ctx context.Context, id uint64, total int64) (prev int64, err error) {
	if total < 0 || total > MaxStock {
		return 0, fmt.Errorf("%w: stock_total must be from 0 to %d", ErrInvalid, MaxStock)
	}
	if !ValidID(id) {
		return 0, fmt.Errorf("%w: %d", ErrNotFound, id)
	}
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var cur SKU
		e := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Take(&cur, "id = ?", id).Error
		if errors.Is(e, gorm.ErrRecordNotFound) {
			return fmt.Errorf("%w: %d", ErrNotFound, id)
		}
		if e != nil {
			return e
		}
		if total < cur.Sold {
			return fmt.Errorf("%w: %d sold, asked for %d", ErrBelowSold, cur.Sold, total)
		}
		prev = cur.StockTotal
		return tx.Model(&SKU{}).Where("id = ?", id).
			Updates(map[string]any{"stock_total": total, "updated_at": s.now().UTC()}).Error
	})
	if err != nil && !errors.Is(err, ErrBelowSold) && !errors.Is(err, ErrNotFound) {
		err = fmt.Errorf("catalog: set stock: %w", err)
	}
	return prev, err
}
