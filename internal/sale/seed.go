package sale

import (
	"context"
	"errors"
	"fmt"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/seedfile"
)

// Seeded is one SKU of a seed as written: created, or an existing one
// updated.
type Seeded struct {
	Created bool       `json:"created"`
	SKU     *SeededSKU `json:"sku"`
}

// Seed writes the SKUs of a seed file in order, each as UpsertSKU does,
// after checking them all: a field out of range in any of them, a new one
// that does not give every required field, or a change the SKU it names
// refuses as the file would leave it (a window that would not end after it
// starts, another waiting room, another bucket count, a stock below what
// SQL has sold) is refused naming it, and nothing is written. A write that
// fails anyway (a store's failure, units taken in Redis meanwhile) stops
// the seed; the SKUs before it stay written, and the error says how many.
// Errors also: those of UpsertSKU.
func (s *Service) Seed(ctx context.Context, specs []catalog.Spec) ([]Seeded, error) {
	if len(specs) == 0 {
		return nil, fmt.Errorf("%w: the seed has no sku", catalog.ErrInvalid)
	}
	for i := range specs {
		if err := specs[i].Validate(); err != nil {
			return nil, fmt.Errorf("%s: %w", seedfile.Name(i, specs[i]), err)
		}
	}
	if err := seedfile.CheckNew(ctx, s.skus, specs, false); err != nil {
		return nil, err
	}
	if err := s.CheckSeed(ctx, specs); err != nil {
		return nil, err
	}
	out := make([]Seeded, 0, len(specs))
	for i, spec := range specs {
		v, created, err := s.UpsertSKU(ctx, spec)
		if err != nil {
			return nil, fmt.Errorf("seed %s (%d of %d written before it): %w", seedfile.Label(i, spec), i, len(specs), err)
		}
		out = append(out, Seeded{Created: created, SKU: v})
	}
	return out, nil
}

// CheckSeed applies specs, each valid already, in order to the SKUs SQL
// holds, as a seed would write them, writing nothing: the first one
// refused is the error, naming it. A SKU the file names twice is judged as
// the file leaves it.
func (s *Service) CheckSeed(ctx context.Context, specs []catalog.Spec) error {
	now := s.o.Now()
	state := map[uint64]catalog.SKU{}
	for i := range specs {
		spec := specs[i]
		if spec.ID == 0 {
			continue // a new SKU, checked whole already
		}
		cur, ok := state[spec.ID]
		if !ok {
			got, err := s.skus.Get(ctx, spec.ID)
			switch {
			case errors.Is(err, catalog.ErrNotFound):
				next, err := spec.New(now)
				if err != nil {
					return fmt.Errorf("seed %s: %w", seedfile.Label(i, spec), err)
				}
				state[spec.ID] = next
				continue
			case err != nil:
				return err
			}
			cur = *got
		}
		next, err := spec.Apply(cur, now)
		if err != nil {
			return fmt.Errorf("seed %s: %w", seedfile.Label(i, spec), err)
		}
		state[spec.ID] = next
	}
	return nil
}
