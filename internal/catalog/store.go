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

// Get returns the SKU or ErrNotFound; the first SKU of a drop with its
// Group.
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
	if sku.Drop == sku.ID {
		if sku.Group, err = readDrop(s.db.WithContext(ctx), id); err != nil {
			return nil, err
		}
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
// existing one, changes it as Update does: UpsertAll of spec alone. It
// returns the stored SKU and whether it was created.
func (s *Store) Upsert(ctx context.Context, spec Spec) (_ *SKU, created bool, err error) {
	w, err := s.UpsertAll(ctx, []Spec{spec})
	var ie *IndexError
	if errors.As(err, &ie) {
		err = ie.Err
	}
	if err != nil {
		return nil, false, err
	}
	return w[0].SKU, w[0].Created, nil
}

// Written is a spec as UpsertAll wrote it: the SKU as the spec left it, and
// whether the spec created it.
type Written struct {
	SKU     *SKU
	Created bool
}

// IndexError is the error of the spec at index I of UpsertAll's specs.
type IndexError struct {
	I   int
	Err error
}

func (e *IndexError) Error() string { return fmt.Sprintf("spec %d: %v", e.I+1, e.Err) }

func (e *IndexError) Unwrap() error { return e.Err }

// UpsertAll writes specs in one transaction, all or none, and returns them
// as written, in their order. A spec whose ID names an existing SKU changes
// it as Update does (the SKUs named are held from the start, in id order);
// any other creates a SKU, which needs every Required field and gets
// spec.Buckets buckets (1 when not given). The specs with an ID are
// written first, in their order, then those without one: the database
// gives these ids past every id the others name, so no spec overwrites the
// SKU another created. The first spec refused is an *IndexError wrapping
// its ErrInvalid, ErrBucketsFixed or ErrBelowSold. ErrIDTaken: a new SKU's
// id was taken meanwhile by a create without an id (judge the specs again:
// that SKU exists now).
func (s *Store) UpsertAll(ctx context.Context, specs []Spec) ([]Written, error) {
	for i := range specs {
		if err := specs[i].Validate(); err != nil {
			return nil, &IndexError{I: i, Err: err}
		}
	}
	order := make([]int, 0, len(specs))
	var ids []uint64
	for i, spec := range specs {
		if spec.ID != 0 {
			order = append(order, i)
			ids = append(ids, spec.ID)
		}
	}
	for i, spec := range specs {
		if spec.ID == 0 {
			order = append(order, i)
		}
	}
	now := s.now().UTC()
	out := make([]Written, len(specs))
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		held, err := lockAll(tx, ids)
		if err != nil {
			return err
		}
		for _, i := range order {
			spec := specs[i]
			if cur, ok := held[spec.ID]; ok && spec.ID != 0 {
				sku, err := update(tx, cur, spec, now)
				if err != nil {
					return &IndexError{I: i, Err: err}
				}
				held[spec.ID], out[i] = sku, Written{SKU: sku}
				continue
			}
			sku, err := create(tx, spec, now)
			if err != nil {
				return &IndexError{I: i, Err: err}
			}
			held[sku.ID], out[i] = sku, Written{SKU: sku, Created: true}
		}
		return nil
	})
	if err != nil {
		return nil, wrapWrite("upsert", err)
	}
	return out, nil
}

// Create creates the SKU spec describes, which needs every Required field
// (ErrInvalid naming those missing). ErrIDTaken: spec.ID is an existing
// SKU's, or, without one, the id the database gave was taken meanwhile by a
// create that gave it (try again).
func (s *Store) Create(ctx context.Context, spec Spec) (*SKU, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	var out *SKU
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var err error
		out, err = create(tx, spec, s.now().UTC())
		return err
	})
	if err != nil {
		return nil, wrapWrite("create", err)
	}
	return out, nil
}

// create inserts the SKU spec describes in tx.
func create(tx *gorm.DB, spec Spec, now time.Time) (*SKU, error) {
	sku, err := spec.New(now)
	if err != nil {
		return nil, err
	}
	// Without an id the database takes the one after the largest used:
	// once MaxID is used there is none left in range (SQLite refuses the
	// insert, MySQL would go past MaxID).
	if spec.ID == 0 {
		var top uint64
		if err := tx.Model(&SKU{}).Select("COALESCE(MAX(id), 0)").Scan(&top).Error; err != nil {
			return nil, err
		}
		if top >= MaxID {
			return nil, errNoIDLeft
		}
	}
	if err := tx.Create(&sku).Error; err != nil {
		if duplicate(tx, err) {
			return nil, fmt.Errorf("%w: %d", ErrIDTaken, spec.ID)
		}
		return nil, err
	}
	if !ValidID(sku.ID) {
		return nil, errNoIDLeft
	}
	return &sku, nil
}

// duplicate reports whether err is the database's refusal of a key it
// holds already.
func duplicate(tx *gorm.DB, err error) bool {
	if t, ok := tx.Dialector.(gorm.ErrorTranslator); ok {
		err = t.Translate(err)
	}
	return errors.Is(err, gorm.ErrDuplicatedKey)
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

// lockAll reads the SKUs of ids that exist in tx, holding their rows, in
// id order, until tx ends. Only rows found are held: a read of ids that
// exist takes no lock, and the locking read then names those alone, so no
// gap of the index is held against another create.
func lockAll(tx *gorm.DB, ids []uint64) (map[uint64]*SKU, error) {
	held := map[uint64]*SKU{}
	if len(ids) == 0 {
		return held, nil
	}
	var found []uint64
	if err := tx.Model(&SKU{}).Where("id IN ?", ids).Order("id").Pluck("id", &found).Error; err != nil || len(found) == 0 {
		return held, err
	}
	var skus []SKU
	if err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Where("id IN ?", found).Order("id").Find(&skus).Error; err != nil {
		return nil, err
	}
	for i := range skus {
		held[skus[i].ID] = &skus[i]
	}
	return held, nil
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
	if errors.Is(err, ErrBelowSold) || errors.Is(err, ErrBucketsFixed) || errors.Is(err, ErrInvalid) || errors.Is(err, ErrNotFound) ||
		errors.Is(err, ErrIDTaken) || errors.Is(err, ErrInDrop) || errors.Is(err, ErrHasRoom) || errors.Is(err, ErrStarted) ||
		errors.Is(err, ErrDropNotFound) {
		return err
	}
	return fmt.Errorf("catalog: %s: %w", op, err)
}
