package catalog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"
)

// Drop errors.
var (
	ErrDropNotFound = errors.New("unknown drop")
	// ErrInDrop: a SKU given for a new drop belongs to another one, or a
	// change asked for what a SKU of a drop cannot change on its own.
	ErrInDrop = errors.New("the sku belongs to a drop")
	// ErrHasRoom: a SKU given for a new drop has a waiting room of its own.
	ErrHasRoom = errors.New("the sku has a waiting room of its own")
	// ErrStarted: a SKU given for a new drop is on sale already.
	ErrStarted = errors.New("the sku's sale has started")
)

// MaxDropSKUs is the most SKUs a drop holds.
const MaxDropSKUs = 50

// Drop is one product sold as several SKUs (its sizes) through one waiting
// room: the row of table drops. Its id is its first SKU's, whose row keeps
// the room's settings and seed; each of its SKUs names it (SKU.Drop), and
// a SKU's drop never changes.
type Drop struct {
	ID   uint64 `gorm:"column:id;primaryKey;autoIncrement:false"`
	Name string `gorm:"column:name"`
	// PerUserLimit is the units one shopper may buy over all the drop's
	// SKUs.
	PerUserLimit int       `gorm:"column:per_user_limit"`
	CreatedAt    time.Time `gorm:"column:created_at"`
	// SKUs are the ids of the drop's SKUs, the first (the drop's id) first.
	SKUs []uint64 `gorm:"-"`
}

// TableName is drops.
func (Drop) TableName() string { return "drops" }

// DropSpec is what an admin gives to create a drop: the body of POST
// /admin/drops, an item of a seed file's drops.
type DropSpec struct {
	Name         string    `json:"name" yaml:"name"`
	SKUs         []uint64  `json:"skus" yaml:"skus"`
	PerUserLimit int       `json:"per_user_limit" yaml:"per_user_limit"`
	WaitingRoom  *RoomSpec `json:"waiting_room" yaml:"waiting_room"`
}

// Validate reports the first field out of range, wrapping ErrInvalid. It
// trims the name, sorts the SKUs and cuts opens_at to the millisecond, so
// that what it judges is what is kept.
func (d *DropSpec) Validate() error { return ofDrop(d.validate()) }

func (d *DropSpec) validate() error {
	d.Name = strings.TrimSpace(d.Name)
	switch {
	case d.Name == "" || utf8.RuneCountInString(d.Name) > MaxNameLen || !utf8.ValidString(d.Name):
		return invalidf("name must be 1 to %d characters", MaxNameLen)
	case len(d.SKUs) == 0 || len(d.SKUs) > MaxDropSKUs:
		return invalidf("skus must list 1 to %d sku ids", MaxDropSKUs)
	case d.PerUserLimit < 1 || d.PerUserLimit > MaxPerUserLimit:
		return invalidf("per_user_limit must be from 1 to %d", MaxPerUserLimit)
	case d.WaitingRoom == nil:
		return invalidf("a drop needs a waiting_room")
	}
	d.SKUs = slices.Clone(d.SKUs)
	slices.Sort(d.SKUs)
	for i, id := range d.SKUs {
		if !ValidID(id) {
			return invalidf("skus: %d is not a sku id", id)
		}
		if i > 0 && d.SKUs[i-1] == id {
			return invalidf("skus: %d is given twice", id)
		}
	}
	d.WaitingRoom.OpensAt = kept(d.WaitingRoom.OpensAt)
	return d.WaitingRoom.validate()
}

// CreateDrop creates the drop spec describes, in one transaction holding
// its SKUs' rows, and returns it with its SKUs. The same spec again
// answers the drop as it is, created false. Errors, each writing nothing:
// ErrInvalid (a field out of range, SKUs of different windows or split in
// buckets, opens_at after the start), ErrNotFound (naming the SKU),
// ErrInDrop, ErrHasRoom, ErrStarted.
func (s *Store) CreateDrop(ctx context.Context, spec DropSpec) (_ *Drop, _ []SKU, created bool, err error) {
	if err := spec.Validate(); err != nil {
		return nil, nil, false, err
	}
	var d *Drop
	var skus []SKU
	now := s.now().UTC()
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		held, err := lockAll(tx, spec.SKUs)
		if err != nil {
			return err
		}
		skus = make([]SKU, 0, len(spec.SKUs))
		for _, id := range spec.SKUs {
			sku, ok := held[id]
			if !ok {
				return fmt.Errorf("%w: %d", ErrNotFound, id)
			}
			skus = append(skus, *sku)
		}
		lead := &skus[0]
		if d, err = sameDrop(tx, spec, skus); d != nil || err != nil {
			return err
		}
		if err := fits(spec, skus, now); err != nil {
			return ofDrop(err)
		}
		room, err := spec.WaitingRoom.room()
		if err != nil {
			return err
		}
		d = &Drop{ID: lead.ID, Name: spec.Name, PerUserLimit: spec.PerUserLimit, CreatedAt: now, SKUs: spec.SKUs}
		if err := tx.Create(d).Error; err != nil {
			if duplicate(tx, err) { // a drop of this first SKU made by a create the rows' locks did not hold off
				return fmt.Errorf("%w: sku %d", ErrInDrop, lead.ID)
			}
			return err
		}
		if err := tx.Model(&SKU{}).Where("id IN ?", spec.SKUs).Updates(map[string]any{"drop_id": lead.ID, "updated_at": now}).Error; err != nil {
			return err
		}
		cols := map[string]any{"room_opens_at": room.OpensAt, "room_mode": room.Mode, "room_admit_per_second": room.AdmitPerSecond,
			"room_pass_ttl_ms": room.PassTTLMS, "room_overbook": room.Overbook, "room_pow_bits": room.PowBits, "room_seed": room.Seed}
		if err := tx.Model(&SKU{}).Where("id = ?", lead.ID).Updates(cols).Error; err != nil {
			return err
		}
		for i := range skus {
			skus[i].Drop, skus[i].UpdatedAt = lead.ID, now
		}
		lead.Room = room
		created = true
		return nil
	})
	if err != nil {
		return nil, nil, false, wrapWrite("create drop", err)
	}
	skus[0].Group = d
	return d, skus, created, nil
}

// sameDrop returns the drop of skus when it is the one spec describes (a
// create given again); nil, and ErrInDrop when one of them is in a drop,
// otherwise.
func sameDrop(tx *gorm.DB, spec DropSpec, skus []SKU) (*Drop, error) {
	for _, sku := range skus {
		if sku.Drop == 0 {
			continue
		}
		if sku.Drop != skus[0].ID {
			return nil, fmt.Errorf("%w: sku %d is in drop %d", ErrInDrop, sku.ID, sku.Drop)
		}
	}
	if skus[0].Drop == 0 {
		return nil, nil
	}
	d, err := readDrop(tx, skus[0].ID)
	if err != nil {
		return nil, err
	}
	if d.Name != spec.Name || d.PerUserLimit != spec.PerUserLimit || !slices.Equal(d.SKUs, spec.SKUs) ||
		!spec.WaitingRoom.same(skus[0].Room) {
		return nil, fmt.Errorf("%w: sku %d is in drop %d, made with other settings", ErrInDrop, skus[0].ID, d.ID)
	}
	return d, nil
}

// dropError is an ErrInvalid that a drop's check gave: it says so.
type dropError struct{ err error }

func (e dropError) Error() string {
	return "invalid drop: " + strings.TrimPrefix(e.err.Error(), ErrInvalid.Error()+": ")
}

func (e dropError) Unwrap() error { return e.err }

// ofDrop is err, an ErrInvalid of a drop's check, saying it is a drop's.
func ofDrop(err error) error {
	if errors.Is(err, ErrInvalid) {
		return dropError{err}
	}
	return err
}

// CheckDrop checks spec, valid already (DropSpec.Validate), against skus,
// its SKUs in its order, as CreateDrop would at now: nil when they may
// make the drop, or make it already (CreateDrop then tells whether with
// other settings).
func CheckDrop(spec DropSpec, skus []SKU, now time.Time) error {
	same := true
	for _, sku := range skus {
		same = same && sku.Drop == skus[0].ID
	}
	if same {
		return nil
	}
	return ofDrop(fits(spec, skus, now))
}

// fits checks the SKUs of a new drop: none in a drop, none with a room of
// its own or split in buckets, one sale window not yet started, and a room
// that opens by then.
func fits(spec DropSpec, skus []SKU, now time.Time) error {
	first := skus[0]
	for _, sku := range skus {
		switch {
		case sku.Drop != 0:
			return fmt.Errorf("%w: sku %d is in drop %d", ErrInDrop, sku.ID, sku.Drop)
		case sku.Room.On():
			return fmt.Errorf("%w: sku %d", ErrHasRoom, sku.ID)
		case sku.Buckets > 1:
			return invalidf("sku %d is split in %d buckets: a drop's skus have 1, so that the drop's room admits to them all in one place", sku.ID, sku.Buckets)
		case !sku.StartsAt.Equal(first.StartsAt) || !sku.EndsAt.Equal(first.EndsAt):
			return invalidf("the skus of a drop share one sale window: sku %d runs from %s to %s, sku %d from %s to %s",
				first.ID, first.StartsAt.Format(time.RFC3339Nano), first.EndsAt.Format(time.RFC3339Nano),
				sku.ID, sku.StartsAt.Format(time.RFC3339Nano), sku.EndsAt.Format(time.RFC3339Nano))
		case !now.Before(sku.StartsAt):
			return fmt.Errorf("%w: sku %d went on sale at %s", ErrStarted, sku.ID, sku.StartsAt.Format(time.RFC3339Nano))
		}
	}
	if spec.WaitingRoom.OpensAt.After(first.StartsAt) {
		return invalidf("waiting_room.opens_at must be at or before the skus' starts_at")
	}
	return nil
}

// GetDrop returns the drop with id and its SKUs, the first first:
// ErrDropNotFound when there is none.
func (s *Store) GetDrop(ctx context.Context, id uint64) (*Drop, []SKU, error) {
	if !ValidID(id) {
		return nil, nil, fmt.Errorf("%w: %d", ErrDropNotFound, id)
	}
	d, err := readDrop(s.db.WithContext(ctx), id)
	if err != nil {
		return nil, nil, err
	}
	var skus []SKU
	if err := s.db.WithContext(ctx).Where("drop_id = ?", id).Order("id").Find(&skus).Error; err != nil {
		return nil, nil, fmt.Errorf("catalog: drop %d: %w", id, err)
	}
	if len(skus) > 0 {
		skus[0].Group = d
	}
	return d, skus, nil
}

// readDrop reads drop id and its SKUs' ids in tx.
func readDrop(tx *gorm.DB, id uint64) (*Drop, error) {
	var d Drop
	err := tx.Take(&d, "id = ?", id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, fmt.Errorf("%w: %d", ErrDropNotFound, id)
	}
	if err != nil {
		return nil, fmt.Errorf("catalog: drop %d: %w", id, err)
	}
	if err := tx.Model(&SKU{}).Where("drop_id = ?", id).Order("id").Pluck("id", &d.SKUs).Error; err != nil {
		return nil, fmt.Errorf("catalog: drop %d: %w", id, err)
	}
	return &d, nil
}
