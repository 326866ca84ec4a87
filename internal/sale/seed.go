package sale

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/seedfile"
)

// Seeded is one SKU of a seed as written: created, or an existing one
// updated.
type Seeded struct {
	Created bool       `json:"created"`
	SKU     *SeededSKU `json:"sku"`
}

// Seed writes the rows of a seed file (or of seed's flags) whole, or
// nothing. It judges every row first, against the SKUs as stored and as
// the rows before it leave them: a field out of range, a new SKU that does
// not give every required field, or a change its SKU refuses (a window
// that would not end after it starts or would open a drawn waiting room
// again, another waiting room, another bucket count, a stock below what
// SQL has sold) is refused naming its row. It then writes the rows in one
// SQL transaction, holding the admin lock of every SKU they name by id, in
// the order UpsertSKU writes one SKU: a cut is made in Redis first (and
// refused there, naming its row, below the units taken), the rest after
// the commit. A row without an id gets an id no row of the file names, so
// no row overwrites the SKU another created.
//
// After the commit the seed is written, and it answers so: a SKU whose
// Redis state cannot be configured then is left to the rebuild from SQL (a
// new SKU's first buyer makes it; an existing one's is logged to be
// reconciled). Sending the same file again changes nothing in SQL and
// brings Redis to it, but for its rows without an id, which create SKUs
// again. Errors also: those of UpsertSKU.
//
// The file's drops are judged with its rows, against the SKUs as the rows
// leave them, and made once the rows are written, each as CreateDrop makes
// one: a drop refused then (another admin made one of its SKUs part of a
// drop meanwhile) names its row, with the rows written.
func (s *Service) Seed(ctx context.Context, f seedfile.File) ([]Seeded, []DropView, error) {
	rows := f.Rows
	if len(rows) == 0 && len(f.Drops) == 0 {
		return nil, nil, fmt.Errorf("%w: the seed has no sku", catalog.ErrInvalid)
	}
	for i := range rows {
		if err := rows[i].Spec.Validate(); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", rows[i].Name(), err)
		}
	}
	for i := range f.Drops {
		if err := f.Drops[i].Spec.Validate(); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", f.Drops[i].Name(), err)
		}
	}
	out := []Seeded{}
	for try := 1; len(rows) > 0; try++ {
		var err error
		out, err = s.seed(ctx, rows, f.Drops)
		if errors.Is(err, catalog.ErrIDTaken) && try < idTries {
			continue // a create without an id took an id of the file: judge it again
		}
		if err != nil {
			return nil, nil, taken(err)
		}
		break
	}
	drops := make([]DropView, 0, len(f.Drops))
	for _, d := range f.Drops {
		v, _, err := s.CreateDrop(ctx, d.Spec)
		if err != nil {
			return out, drops, fmt.Errorf("%s: %w", d.Name(), err)
		}
		drops = append(drops, *v)
	}
	return out, drops, nil
}

// seed is one attempt of Seed's rows, judging drops with them.
func (s *Service) seed(ctx context.Context, rows []seedfile.Row, drops []seedfile.DropRow) ([]Seeded, error) {
	var ids []uint64
	for _, r := range rows {
		if r.Spec.ID != 0 {
			ids = append(ids, r.Spec.ID)
		}
	}
	for _, d := range drops {
		ids = append(ids, d.Spec.SKUs...)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	var written []catalog.Written
	left := map[uint64]int64{}
	err := s.exclusiveAll(ctx, ids, func(ctx context.Context) error {
		stored := map[uint64]*catalog.SKU{}
		for _, id := range ids {
			sku, err := s.skus.Get(ctx, id)
			switch {
			case err == nil:
				stored[id] = sku
			case !errors.Is(err, catalog.ErrNotFound):
				return err
			}
		}
		next, err := judgeSeed(rows, stored, s.o.Now())
		if err != nil {
			return err
		}
		if err := judgeDrops(drops, stored, next, s.o.Now()); err != nil {
			return err
		}
		var shifts []*shift
		written, shifts, err = s.write(ctx, rows, stored, next)
		if err != nil {
			return err
		}
		s.settle(ctx, rows, written, shifts, left)
		return nil
	})
	if err != nil {
		return nil, err
	}
	// A SKU created without an id is configured under its own lock, after
	// those of the file's ids are let go: nobody knew its id before.
	for i, w := range written {
		if rows[i].Spec.ID == 0 {
			left[w.SKU.ID] = s.configureLocked(ctx, w.SKU).StockLeft
		}
	}
	return s.seededViews(written, left), nil
}

// write makes the cuts of the SKUs that exist in Redis first (see change),
// then writes every row in one SQL transaction. A refusal of either names
// its row and gives back the cuts made. It returns the rows as written and
// the changes of the existing SKUs, for settle.
func (s *Service) write(ctx context.Context, rows []seedfile.Row, stored map[uint64]*catalog.SKU,
	next map[uint64]catalog.SKU) ([]catalog.Written, []*shift, error) {
	var shifts []*shift
	giveBack := func(err error) error {
		for _, sh := range shifts {
			err = s.restore(ctx, sh, err)
		}
		return err
	}
	for _, id := range slices.Sorted(maps.Keys(stored)) {
		final := next[id]
		sh := &shift{cur: stored[id], next: s.config(&final)}
		shifts = append(shifts, sh)
		if err := s.lower(ctx, sh); err != nil {
			return nil, nil, giveBack(fmt.Errorf("%s: %w", rowOf(rows, id).Name(), err))
		}
	}
	specs := make([]catalog.Spec, len(rows))
	for i, r := range rows {
		specs[i] = r.Spec
	}
	written, err := s.skus.UpsertAll(ctx, specs)
	if ie := (*catalog.IndexError)(nil); errors.As(err, &ie) {
		err = fmt.Errorf("%s: %w", rows[ie.I].Name(), ie.Err)
	}
	if err != nil {
		return nil, nil, giveBack(err)
	}
	return written, shifts, nil
}

// rowOf is the row that gives SKU id its stock, or else the last row that
// names it.
func rowOf(rows []seedfile.Row, id uint64) seedfile.Row {
	last := -1
	for i, r := range slices.Backward(rows) {
		if r.Spec.ID == id && r.Spec.Stock != nil {
			return r
		}
		if r.Spec.ID == id && last < 0 {
			last = i
		}
	}
	return rows[max(last, 0)]
}

// settle is the Redis side of a seed after its commit, for the SKUs its
// rows name by id: each existing SKU's change made (raise), each new one
// configured (configureNew). It records the units left of each in left. A
// failure is logged, not returned: the seed is written, and an existing
// SKU whose Redis state was not brought to SQL is to be reconciled.
func (s *Service) settle(ctx context.Context, rows []seedfile.Row, written []catalog.Written, shifts []*shift, left map[uint64]int64) {
	final := map[uint64]*catalog.SKU{}
	var created []uint64
	for i, w := range written {
		final[w.SKU.ID] = w.SKU
		if w.Created && rows[i].Spec.ID != 0 {
			created = append(created, w.SKU.ID)
		}
	}
	for _, sh := range shifts {
		sku := final[sh.cur.ID]
		n, err := s.raise(ctx, sh, sku)
		s.cache.Forget(sku.ID)
		if err != nil {
			s.o.Log.Error("seed: written to sql, but redis not brought to it: reconcile the sku", "sku", sku.ID, "err", err)
			n = max(0, sku.StockTotal-sku.Sold)
		}
		left[sku.ID] = n
	}
	for _, id := range created {
		left[id] = s.configureNew(ctx, final[id]).StockLeft
	}
}

// seededViews are the rows as written: each SKU as its row left it, with
// the units the file leaves taken.
func (s *Service) seededViews(written []catalog.Written, left map[uint64]int64) []Seeded {
	final := map[uint64]*catalog.SKU{}
	for _, w := range written {
		final[w.SKU.ID] = w.SKU
	}
	out := make([]Seeded, len(written))
	for i, w := range written {
		taken := final[w.SKU.ID].StockTotal - left[w.SKU.ID]
		out[i] = Seeded{Created: w.Created, SKU: s.seededView(w.SKU, max(0, w.SKU.StockTotal-taken))}
	}
	return out
}

// judgeDrops checks drops against the SKUs as the seed leaves them (next,
// or stored for those it does not name), writing nothing: the first drop
// refused is the error, naming it.
func judgeDrops(drops []seedfile.DropRow, stored map[uint64]*catalog.SKU, next map[uint64]catalog.SKU, now time.Time) error {
	for _, d := range drops {
		skus := make([]catalog.SKU, 0, len(d.Spec.SKUs))
		for _, id := range d.Spec.SKUs {
			sku, ok := next[id]
			if !ok && stored[id] != nil {
				sku, ok = *stored[id], true
			}
			if !ok {
				return fmt.Errorf("%s: %w: %d", d.Name(), catalog.ErrNotFound, id)
			}
			skus = append(skus, sku)
		}
		if err := catalog.CheckDrop(d.Spec, skus, now); err != nil {
			return fmt.Errorf("%s: %w", d.Name(), err)
		}
	}
	return nil
}

// judgeSeed applies rows, each valid already, in order to the SKUs they
// name by id (stored holds those that exist) as a seed at now would write
// them, writing nothing, and returns each such SKU as the rows leave it. A
// row without an id is a new SKU, judged alone. The first row refused is
// the error, naming it.
func judgeSeed(rows []seedfile.Row, stored map[uint64]*catalog.SKU, now time.Time) (map[uint64]catalog.SKU, error) {
	next := map[uint64]catalog.SKU{}
	for _, r := range rows {
		spec := r.Spec
		cur, seen := next[spec.ID]
		if !seen && stored[spec.ID] != nil {
			cur, seen = *stored[spec.ID], true
		}
		if spec.ID == 0 || !seen {
			if err := seedfile.NeedsAll(r); err != nil {
				return nil, err
			}
			sku, err := spec.New(now)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", r.Name(), err)
			}
			if spec.ID != 0 {
				next[spec.ID] = sku
			}
			continue
		}
		sku, err := spec.Apply(cur, now)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.Name(), err)
		}
		next[spec.ID] = sku
	}
	return next, nil
}
