package seedfile

import (
	"fmt"
	"strings"

	"github.com/seckill/seckill/internal/catalog"
)

// MissingError is a new SKU of a seed that does not give every required
// field; it is a catalog.ErrInvalid.
type MissingError struct{ text string }

func (e *MissingError) Error() string { return e.text }

// Is makes a MissingError a catalog.ErrInvalid.
func (e *MissingError) Is(target error) bool { return target == catalog.ErrInvalid } //nolint:errorlint // the sentinel itself

// NeedsAll reports the required fields that r, a new SKU, does not give (a
// *MissingError naming the row; nil when it gives them all), with their
// flags when r is the SKU of seed's flags.
func NeedsAll(r Row) error {
	missing := r.Spec.Missing()
	if len(missing) == 0 {
		return nil
	}
	if r.Line == 0 {
		for j, m := range missing {
			missing[j] = fmt.Sprintf("%s (--%s)", m, strings.ReplaceAll(m, "_", "-"))
		}
	}
	return &MissingError{fmt.Sprintf("%s: a new sku needs %s; a field left out is not 0 (give price_cents 0 for a free sale)",
		r.Name(), strings.Join(missing, ", "))}
}
