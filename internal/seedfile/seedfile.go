// Package seedfile reads the SKU files that `seckill seed --file` and
// POST /admin/seed take: a YAML list of SKU objects (catalog.Spec's fields),
// or a CSV file whose header names its columns. A YAML key left out (or
// null) and an empty CSV cell are fields not given, so a file that re-seeds
// existing SKUs changes only what it names.
//
// A file is read whole or refused: every error names the line of the file
// and the field, and an unknown field is answered with the fields there
// are. A whole number is one (a fraction, or a number past its type's
// range, is refused rather than cut), a number is finite, a time is RFC
// 3339, and a YAML file is one document.
package seedfile

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/seckill/seckill/internal/catalog"
)

// Format is the form of a seed file.
type Format int

// The forms of a seed file.
const (
	YAML Format = iota
	CSV
)

// FormatOf is the form of the file named name: CSV for a .csv file, YAML
// otherwise.
func FormatOf(name string) Format {
	if strings.EqualFold(filepath.Ext(name), ".csv") {
		return CSV
	}
	return YAML
}

// Row is one SKU of a seed: its fields, and the line of the file it starts
// on. Line 0 is the SKU that seed's flags give.
type Row struct {
	Spec catalog.Spec
	Line int
}

// Name names the row in an error: its line, with the SKU's id and name
// when given ("line 4 (id 7, "Phone X")"); the flags' SKU as a SKU ("sku
// 7 ("Phone X")", or its name alone).
func (r Row) Name() string {
	var about []string
	if r.Spec.ID != 0 {
		about = append(about, fmt.Sprintf("id %d", r.Spec.ID))
	}
	if r.Spec.Name != nil {
		about = append(about, strconv.Quote(*r.Spec.Name))
	}
	switch {
	case r.Line > 0 && len(about) == 0:
		return fmt.Sprintf("line %d", r.Line)
	case r.Line > 0:
		return fmt.Sprintf("line %d (%s)", r.Line, strings.Join(about, ", "))
	case r.Spec.ID != 0 && r.Spec.Name != nil:
		return fmt.Sprintf("sku %d (%s)", r.Spec.ID, about[1])
	case r.Spec.ID != 0:
		return fmt.Sprintf("sku %d", r.Spec.ID)
	case r.Spec.Name != nil:
		return about[0]
	}
	return "the sku"
}

// Fields are the keys of a SKU in a YAML seed file, RoomFields those of its
// waiting_room, and Columns the columns a CSV seed file may have, in any
// order: the SKU's fields (but hidden) and the room's, prefixed room_.
var (
	Fields     = []string{"id", "name", "price_cents", "stock", "per_user_limit", "starts_at", "ends_at", "buckets", "hidden", "limit_counts_cancelled", "waiting_room"}
	RoomFields = []string{"opens_at", "mode", "admit_per_second", "pass_ttl", "overbook", "pow_bits"}
	Columns    = []string{"id", "name", "price_cents", "stock", "per_user_limit", "starts_at", "ends_at", "buckets", "limit_counts_cancelled",
		"room_opens_at", "room_mode", "room_admit_per_second", "room_pass_ttl", "room_overbook", "room_pow_bits"}
)

// Read reads the SKUs and drops of a seed file in form f, each with the
// line it starts on (a CSV file has no drops). The error of a file it
// refuses names the line and the field, and nothing is read from it.
func Read(r io.Reader, f Format) (File, error) {
	if f == CSV {
		rows, err := readCSV(r)
		return File{Rows: rows}, err
	}
	return readYAML(r)
}

// ParseTime reads the RFC 3339 time s of field; "" is the zero time.
func ParseTime(field, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: want RFC 3339 such as 2026-11-11T00:00:00Z, not %q", field, s)
	}
	return t, nil
}

// finite reports whether f is a number a field may take: not NaN, not
// infinite.
func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }
