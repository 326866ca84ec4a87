package catalog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

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
	if _, err := spec.Apply(*cur, now); err != nil {
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
