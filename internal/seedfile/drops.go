package seedfile

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/seckill/seckill/internal/catalog"
)

// File is what a seed file holds: its SKUs, and the drops made of them
// (YAML only: docs/admin/seed-files.md).
type File struct {
	Rows  []Row
	Drops []DropRow
}

// DropRow is one drop of a seed file, and the line it starts on.
type DropRow struct {
	Spec catalog.DropSpec
	Line int
}

// Name names the drop in an error: its line and name.
func (r DropRow) Name() string {
	if r.Spec.Name == "" {
		return fmt.Sprintf("line %d (a drop)", r.Line)
	}
	return fmt.Sprintf("line %d (drop %q)", r.Line, r.Spec.Name)
}

// DropFields are the keys of a drop in a YAML seed file; FileFields those
// of the file's mapping form.
var (
	DropFields = []string{"name", "skus", "per_user_limit", "waiting_room"}
	FileFields = []string{"skus", "drops"}
)

// file reads the mapping form of a YAML seed file: {skus: [...], drops:
// [...]}.
func (d *decoder) file(m *yaml.Node) (File, error) {
	fields, err := d.pairs(m, 0)
	if err != nil {
		return File{}, err
	}
	var f File
	for _, p := range fields {
		if p.key.Value != "skus" && p.key.Value != "drops" {
			return File{}, fmt.Errorf("line %d: unknown field %q: a seed file is a list of skus, each item - {id: 1, name: Phone X, …}, "+
				"or a mapping of its %s", p.key.Line, p.key.Value, strings.Join(FileFields, " and "))
		}
		v := deref(p.value)
		if isNull(v) {
			continue
		}
		if v.Kind != yaml.SequenceNode {
			return File{}, fmt.Errorf("line %d: %s is a list, not %s", v.Line, p.key.Value, describe(v))
		}
		switch p.key.Value {
		case "skus":
			if f.Rows, err = d.rows(v); err != nil {
				return File{}, err
			}
		case "drops":
			for _, item := range v.Content {
				s, err := d.drop(deref(item))
				if err != nil {
					return File{}, err
				}
				f.Drops = append(f.Drops, DropRow{Spec: s, Line: item.Line})
			}
		}
	}
	if len(f.Rows) == 0 && len(f.Drops) == 0 {
		return File{}, fmt.Errorf("line %d: the file names no sku and no drop", m.Line)
	}
	return f, nil
}

// rows are the SKUs of the list l.
func (d *decoder) rows(l *yaml.Node) ([]Row, error) {
	rows := make([]Row, 0, len(l.Content))
	for _, item := range l.Content {
		s, err := d.spec(deref(item))
		if err != nil {
			return nil, err
		}
		rows = append(rows, Row{Spec: s, Line: item.Line})
	}
	return rows, nil
}

// drop is the drop of the mapping m.
func (d *decoder) drop(m *yaml.Node) (catalog.DropSpec, error) {
	var s catalog.DropSpec
	if m.Kind != yaml.MappingNode {
		return s, fmt.Errorf("line %d: a drop is a mapping of its fields, such as {name: Runner 2, skus: [41, 42], …}, not %s", m.Line, describe(m))
	}
	fields, err := d.pairs(m, 0)
	if err != nil {
		return s, err
	}
	for _, p := range fields {
		v := deref(p.value)
		if isNull(v) {
			continue
		}
		var err error
		switch p.key.Value {
		case "name":
			var name *string
			if name, err = text(v); name != nil {
				s.Name = *name
			}
		case "skus":
			s.SKUs, err = ids(v)
		case "per_user_limit":
			s.PerUserLimit, err = small(v)
		case "waiting_room":
			if s.WaitingRoom, err = d.room(v); err != nil {
				return s, err // names its own line and field
			}
		default:
			return s, fmt.Errorf("line %d: unknown field %q: a drop's fields are %s", p.key.Line, p.key.Value, strings.Join(DropFields, ", "))
		}
		if err != nil {
			return s, fmt.Errorf("line %d: %s: %w", v.Line, p.key.Value, err)
		}
	}
	return s, nil
}

// ids reads a list of SKU ids, at most catalog.MaxDropSKUs of them.
func ids(l *yaml.Node) ([]uint64, error) {
	if l.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("want a list of sku ids such as [41, 42], not %s", describe(l))
	}
	if len(l.Content) > catalog.MaxDropSKUs {
		return nil, fmt.Errorf("at most %d sku ids", catalog.MaxDropSKUs)
	}
	out := make([]uint64, 0, len(l.Content))
	for _, item := range l.Content {
		n, err := whole(deref(item))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("want sku ids from 1 to %d, not %s", uint64(catalog.MaxID), describe(deref(item)))
		}
		out = append(out, uint64(n)) //nolint:gosec // at least 1, checked above
	}
	return out, nil
}
