package catalog

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

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
// the name of surrounding white space and cuts the times to the
// millisecond, as they are stored, so that what it judges is what is kept.
func (s *Spec) Validate() error {
	s.StartsAt, s.EndsAt = kept(s.StartsAt), kept(s.EndsAt)
	if r := s.WaitingRoom; r != nil {
		r.OpensAt = kept(r.OpensAt)
	}
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
		return invalidf("ends_at must be after starts_at: the sale would run from %s to %s (times are kept to the millisecond)",
			s.StartsAt.Format(time.RFC3339Nano), s.EndsAt.Format(time.RFC3339Nano))
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

// kept is t as SQL keeps it: in UTC, to the millisecond (MySQL's
// DATETIME(3) would round or cut what is finer, by its settings). nil
// stays nil.
func kept(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	return new(t.UTC().Truncate(time.Millisecond))
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

// Apply returns cur changed by s at now: the fields s gives, the others as
// they are. It refuses, changing nothing, a field out of range or an ID
// other than cur's (ErrInvalid), a window it moves that would not end after
// it starts or that would open a drawn waiting room again (ErrInvalid, see
// reopens), a bucket count other than cur's (ErrBucketsFixed), a window
// moved for a SKU of a drop (ErrInDrop) and a stock below what cur has sold
// (ErrBelowSold).
func (s *Spec) Apply(cur SKU, now time.Time) (SKU, error) {
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
	if cur.Drop != 0 && (!next.StartsAt.Equal(cur.StartsAt) || !next.EndsAt.Equal(cur.EndsAt)) {
		return SKU{}, fmt.Errorf("%w: sku %d is in drop %d, whose skus share one sale window", ErrInDrop, cur.ID, cur.Drop)
	}
	if moved && !next.EndsAt.After(next.StartsAt) {
		return SKU{}, invalidf("ends_at must be after starts_at: the sale would run from %s to %s (times are kept to the millisecond)",
			next.StartsAt.Format(time.RFC3339Nano), next.EndsAt.Format(time.RFC3339Nano))
	}
	if moved && next.Room.On() && next.Room.OpensAt.After(next.StartsAt) {
		return SKU{}, invalidf("starts_at must be at or after the waiting room's opens_at (%s)", next.Room.OpensAt.Format(time.RFC3339Nano))
	}
	if moved && reopens(cur, next, now) {
		return SKU{}, invalidf("starts_at cannot move past now: sku %d's waiting room drew its line at %s with a seed that is public since, "+
			"so a new start would draw a new line everyone can compute in advance. Keep starts_at in the past (ends_at may still move), "+
			"or create a new sku, with a room of its own, for another sale", cur.ID, cur.StartsAt.Format(time.RFC3339Nano))
	}
	if next.StockTotal < cur.Sold {
		return SKU{}, fmt.Errorf("%w: %d sold, asked for %d", ErrBelowSold, cur.Sold, next.StockTotal)
	}
	return next, nil
}

// reopens reports whether next, cur with its window moved at now, opens
// cur's waiting room for a draw again once its seed is public: a random
// room's seed is shown from the sale's start (and with the draw from its
// end), so from then on a start after now would draw a pre-queue whose
// order anyone knows in advance. A fifo room has no draw.
func reopens(cur, next SKU, now time.Time) bool {
	return cur.Room.On() && cur.Room.Mode == RoomRandom && !now.Before(cur.StartsAt) && now.Before(next.StartsAt)
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
