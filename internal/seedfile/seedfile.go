// Package seedfile reads the SKU files that `seckill seed --file` and
// POST /admin/seed take: a YAML list of SKU objects (catalog.Spec's YAML
// form), or a CSV file whose header names its columns. A YAML key left out
// (or null) and an empty CSV cell are fields not given, so a file that
// re-seeds existing SKUs changes only what it names. It also holds the one
// check a seed makes before it writes anything: every new SKU gives every
// required field.
package seedfile

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

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

// Read reads the SKUs of a seed file in form f. Errors name the CSV line
// or the YAML problem; nothing is read from a file with one.
func Read(r io.Reader, f Format) ([]catalog.Spec, error) {
	if f == CSV {
		return readCSV(r)
	}
	var specs []catalog.Spec
	dec := yaml.NewDecoder(r)
	dec.KnownFields(true)
	if err := dec.Decode(&specs); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("yaml: empty file")
		}
		return nil, err
	}
	return specs, nil
}

// Columns are the columns a CSV seed file may have, in any order.
var Columns = []string{"id", "name", "price_cents", "stock", "per_user_limit", "starts_at", "ends_at", "buckets", "limit_counts_cancelled",
	"room_opens_at", "room_mode", "room_admit_per_second", "room_pass_ttl", "room_overbook"}

func readCSV(r io.Reader) ([]catalog.Spec, error) {
	rows, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("csv: %w", err)
	}
	if len(rows) == 0 {
		return nil, errors.New("csv: empty file")
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		h = strings.TrimSpace(strings.ToLower(h))
		if !slices.Contains(Columns, h) {
			return nil, fmt.Errorf("csv: unknown column %q (the columns are %s)", h, strings.Join(Columns, ", "))
		}
		if _, dup := col[h]; dup {
			return nil, fmt.Errorf("csv: column %q twice", h)
		}
		col[h] = i
	}
	var specs []catalog.Spec
	for n, row := range rows[1:] {
		s, err := csvSpec(col, row)
		if err != nil {
			return nil, fmt.Errorf("csv line %d: %w", n+2, err)
		}
		specs = append(specs, s)
	}
	return specs, nil
}

// csvSpec is the SKU of one CSV row, whose columns col names.
func csvSpec(col map[string]int, row []string) (catalog.Spec, error) {
	// An empty cell, or a column the file does not have, is not given.
	get := func(name string) (string, bool) {
		if i, ok := col[name]; ok && i < len(row) {
			v := strings.TrimSpace(row[i])
			return v, v != ""
		}
		return "", false
	}
	var s catalog.Spec
	var errs []error
	num := func(name string, bits int) *int64 {
		v, ok := get(name)
		if !ok {
			return nil
		}
		n, err := strconv.ParseInt(v, 10, bits)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
		return &n
	}
	if id, ok := get("id"); ok {
		v, err := strconv.ParseUint(id, 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("id: %w", err))
		}
		s.ID = v
	}
	if name, ok := get("name"); ok {
		s.Name = &name
	}
	s.PriceCents = num("price_cents", 64)
	s.Stock = num("stock", 64)
	if v := num("per_user_limit", 32); v != nil {
		limit := int(*v)
		s.PerUserLimit = &limit
	}
	if v := num("buckets", 32); v != nil {
		s.Buckets = int(*v)
	}
	if v, ok := get("limit_counts_cancelled"); ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("limit_counts_cancelled: want true or false: %w", err))
		}
		s.LimitCountsCancelled = &b
	}
	for _, t := range []struct {
		name string
		to   **time.Time
	}{{"starts_at", &s.StartsAt}, {"ends_at", &s.EndsAt}} {
		v, ok := get(t.name)
		if !ok {
			continue
		}
		at, err := ParseTime(t.name, v)
		if err != nil {
			errs = append(errs, err)
		}
		*t.to = &at
	}
	// A waiting room: room_opens_at gives one, the other room_ columns set
	// it.
	if v, ok := get("room_opens_at"); ok {
		at, err := ParseTime("room_opens_at", v)
		if err != nil {
			errs = append(errs, err)
		}
		r := &catalog.RoomSpec{OpensAt: &at}
		r.Mode, _ = get("room_mode")
		if v := num("room_admit_per_second", 32); v != nil {
			r.AdmitPerSecond = int(*v)
		}
		if v, ok := get("room_pass_ttl"); ok {
			if err := r.PassTTL.UnmarshalText([]byte(v)); err != nil {
				errs = append(errs, err)
			}
		}
		if v, ok := get("room_overbook"); ok {
			if r.Overbook, err = strconv.ParseFloat(v, 64); err != nil {
				errs = append(errs, fmt.Errorf("room_overbook: %w", err))
			}
		}
		s.WaitingRoom = r
	} else {
		for _, c := range []string{"room_mode", "room_admit_per_second", "room_pass_ttl", "room_overbook"} {
			if _, ok := get(c); ok {
				errs = append(errs, fmt.Errorf("%s: a waiting room needs room_opens_at", c))
			}
		}
	}
	return s, errors.Join(errs...)
}

// ParseTime reads the RFC 3339 time s of field; "" is the zero time.
func ParseTime(field, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: want RFC 3339 such as 2026-11-11T00:00:00Z: %w", field, err)
	}
	return t, nil
}
