package seedfile

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/seckill/seckill/internal/catalog"
)

// SKUs finds a SKU by id (catalog.Store): catalog.ErrNotFound for one that
// does not exist.
type SKUs interface {
	Get(ctx context.Context, id uint64) (*catalog.SKU, error)
}

// CheckNew refuses, before anything is written, a SKU of specs that is new
// (its id unknown to skus and not seeded earlier in specs, or no id) and
// does not give every required field, with NeedsAll's *MissingError; other
// errors are skus'. With flags, the fields are named with the seed
// command's flags too.
func CheckNew(ctx context.Context, skus SKUs, specs []catalog.Spec, flags bool) error {
	seen := map[uint64]bool{}
	for i, s := range specs {
		if s.ID != 0 {
			if seen[s.ID] {
				continue
			}
			seen[s.ID] = true
			_, err := skus.Get(ctx, s.ID)
			if err == nil {
				continue
			}
			if !errors.Is(err, catalog.ErrNotFound) {
				return err
			}
		}
		if err := NeedsAll(i, s, flags); err != nil {
			return err
		}
	}
	return nil
}

// MissingError is a new SKU of a seed that does not give every required
// field; it is a catalog.ErrInvalid.
type MissingError struct{ text string }

func (e *MissingError) Error() string { return e.text }

// Is makes a MissingError a catalog.ErrInvalid.
func (e *MissingError) Is(target error) bool { return target == catalog.ErrInvalid } //nolint:errorlint // the sentinel itself

// NeedsAll reports the required fields the new SKU s, the i-th of its seed,
// does not give (a *MissingError; nil when it gives them all), with their
// flags when it comes from the seed command's flags.
func NeedsAll(i int, s catalog.Spec, flags bool) error {
	missing := s.Missing()
	if len(missing) == 0 {
		return nil
	}
	if flags {
		for j, m := range missing {
			missing[j] = fmt.Sprintf("%s (--%s)", m, strings.ReplaceAll(m, "_", "-"))
		}
	}
	return &MissingError{fmt.Sprintf("%s is new and needs %s: a field left out is not 0 (give price_cents 0 for a free sale)",
		Name(i, s), strings.Join(missing, ", "))}
}

// Name names the i-th SKU of a seed in an error: its place, with its id
// and name when given.
func Name(i int, s catalog.Spec) string {
	var about []string
	if s.ID != 0 {
		about = append(about, fmt.Sprintf("id %d", s.ID))
	}
	if s.Name != nil {
		about = append(about, strconv.Quote(*s.Name))
	}
	if len(about) == 0 {
		return fmt.Sprintf("sku %d", i+1)
	}
	return fmt.Sprintf("sku %d (%s)", i+1, strings.Join(about, ", "))
}

// Label names a SKU in the error of its write: by its name when given.
func Label(i int, s catalog.Spec) string {
	if s.Name != nil {
		return strconv.Quote(*s.Name)
	}
	return Name(i, s)
}
