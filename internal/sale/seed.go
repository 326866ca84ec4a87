package sale

import (
	"context"
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
// after checking them all: a field out of range in any of them, or a new
// one that does not give every required field, is catalog.ErrInvalid
// naming it, and nothing is written. A write that fails stops the seed;
// the SKUs before it stay written, and the error says how many. Errors
// also: those of UpsertSKU.
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
