// Package catalog keeps the sale inventory: one SKU per item on sale, with
// its price, total stock, units sold, per-user limit and sale window. MySQL
// (or the embedded SQLite) is the source of truth; Cache keeps recent SKUs
// in process memory so the buy path validates a request without a round trip.
package catalog

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/seckill/seckill/internal/stock"
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
	// ErrIDTaken: a new SKU's id is taken, by a SKU created meanwhile.
	// Nothing was written; judged again, the id is an existing SKU's.
	ErrIDTaken = errors.New("sku id taken meanwhile")
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
	// Room is the SKU's waiting room, if it has one (Room.On); the first
	// SKU of a drop keeps the drop's.
	Room Room `gorm:"embedded"`
	// Drop is the drop the SKU belongs to (drop.go), 0 for none: the id of
	// the drop's first SKU.
	Drop uint64 `gorm:"column:drop_id"`
	// Group is the drop whose first SKU this is, as Store.Get reads it;
	// nil for any other SKU.
	Group *Drop `gorm:"-"`
}

// Layout is how the SKU's stock is laid out in Redis.
func (s *SKU) Layout() stock.Layout {
	return stock.Layout{SKU: s.ID, Buckets: s.Buckets, Drop: s.Drop}
}

// RoomID is the SKU whose waiting room gates the SKU's buys: its drop's
// first SKU, or itself.
func (s *SKU) RoomID() uint64 {
	if s.Drop > 0 {
		return s.Drop
	}
	return s.ID
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
