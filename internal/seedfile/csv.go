package seedfile

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seckill/seckill/internal/catalog"
)

// readCSV reads a CSV seed file: a header row naming the columns, then one
// row per SKU with as many cells.
func readCSV(r io.Reader) ([]Row, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1 // counted here, to say so in the seed's words
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("the file is empty: a CSV seed file starts with a header row naming its columns, any of %s", strings.Join(Columns, ", "))
	}
	if err != nil {
		return nil, csvError(err)
	}
	header[0] = strings.TrimPrefix(header[0], "\uFEFF") // a byte order mark, as spreadsheets write
	col := map[string]int{}
	for i, h := range header {
		h = strings.TrimSpace(strings.ToLower(h))
		if !slices.Contains(Columns, h) {
			return nil, fmt.Errorf("line 1: unknown column %q: the columns are %s", h, strings.Join(Columns, ", "))
		}
		if _, dup := col[h]; dup {
			return nil, fmt.Errorf("line 1: column %q twice", h)
		}
		col[h] = i
	}
	var rows []Row
	for {
		cells, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return nil, csvError(err)
		}
		line, _ := cr.FieldPos(0)
		if len(cells) != len(header) {
			return nil, fmt.Errorf("line %d: %d cells, and the header names %d columns", line, len(cells), len(header))
		}
		s, err := csvSpec(col, cells)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		rows = append(rows, Row{Spec: s, Line: line})
	}
}

// csvError is a CSV syntax error, naming its line and column.
func csvError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("line %d, column %d: %w", pe.Line, pe.Column, pe.Err)
	}
	return err
}

// cells reads the cells of one CSV row, whose columns col names, and
// gathers the problems of the row: every cell is read.
type cells struct {
	col  map[string]int
	row  []string
	errs []string
}

// get is the cell of column name; an empty cell, or a column the file does
// not have, is not given.
func (c *cells) get(name string) (string, bool) {
	if i, ok := c.col[name]; ok {
		v := strings.TrimSpace(c.row[i])
		return v, v != ""
	}
	return "", false
}

func (c *cells) fail(name, format string, args ...any) {
	c.errs = append(c.errs, name+": "+fmt.Sprintf(format, args...))
}

// whole reads column name as a whole number of bits bits.
func (c *cells) whole(name string, bits int) *int64 {
	v, ok := c.get(name)
	if !ok {
		return nil
	}
	n, err := strconv.ParseInt(v, 10, bits)
	switch {
	case errors.Is(err, strconv.ErrRange):
		c.fail(name, "%s is out of range", v)
	case err != nil:
		c.fail(name, "want a whole number, not %q", v)
	}
	return &n
}

func (c *cells) small(name string) *int {
	v := c.whole(name, 32)
	if v == nil {
		return nil
	}
	n := int(*v)
	return &n
}

func (c *cells) time(name string) *time.Time {
	v, ok := c.get(name)
	if !ok {
		return nil
	}
	t, err := ParseTime(name, v)
	if err != nil {
		c.errs = append(c.errs, err.Error())
	}
	return &t
}

// csvSpec is the SKU of one CSV row.
func csvSpec(col map[string]int, row []string) (catalog.Spec, error) {
	c := &cells{col: col, row: row}
	var s catalog.Spec
	if v, ok := c.get("id"); ok {
		id, err := strconv.ParseUint(v, 10, 64)
		if err != nil || id > catalog.MaxID {
			c.fail("id", "want a whole number from 1 to %d, not %q", uint64(catalog.MaxID), v)
		}
		s.ID = id
	}
	if name, ok := c.get("name"); ok {
		s.Name = &name
	}
	s.PriceCents = c.whole("price_cents", 64)
	s.Stock = c.whole("stock", 64)
	s.PerUserLimit = c.small("per_user_limit")
	if v := c.small("buckets"); v != nil {
		s.Buckets = *v
	}
	if v, ok := c.get("limit_counts_cancelled"); ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			c.fail("limit_counts_cancelled", "want true or false, not %q", v)
		}
		s.LimitCountsCancelled = &b
	}
	s.StartsAt, s.EndsAt = c.time("starts_at"), c.time("ends_at")
	// A waiting room: room_opens_at gives one, the other room_ columns set
	// it.
	if opens := c.time("room_opens_at"); opens != nil {
		r := &catalog.RoomSpec{OpensAt: opens}
		r.Mode, _ = c.get("room_mode")
		if v := c.small("room_admit_per_second"); v != nil {
			r.AdmitPerSecond = *v
		}
		if v, ok := c.get("room_pass_ttl"); ok {
			d, err := time.ParseDuration(v)
			if err != nil {
				c.fail("room_pass_ttl", "want a duration such as 60s, not %q", v)
			}
			r.PassTTL = catalog.TTL(d)
		}
		if v, ok := c.get("room_overbook"); ok {
			f, err := strconv.ParseFloat(v, 64)
			switch {
			case err != nil && !errors.Is(err, strconv.ErrRange):
				c.fail("room_overbook", "want a number, not %q", v)
			case err != nil || !finite(f):
				c.fail("room_overbook", "want a finite number, not %q", v)
			}
			r.Overbook = f
		}
		if v := c.small("room_pow_bits"); v != nil {
			r.PowBits = *v
		}
		s.WaitingRoom = r
	} else {
		for _, name := range []string{"room_mode", "room_admit_per_second", "room_pass_ttl", "room_overbook", "room_pow_bits"} {
			if _, ok := c.get(name); ok {
				c.fail(name, "a waiting room needs room_opens_at")
			}
		}
	}
	if len(c.errs) > 0 {
		return s, errors.New(strings.Join(c.errs, "; "))
	}
	return s, nil
}
