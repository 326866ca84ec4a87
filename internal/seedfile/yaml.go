package seedfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/seckill/seckill/internal/catalog"
)

// readYAML reads a YAML seed file: one document, a list of mappings (the
// SKUs), or a mapping of the SKUs and the drops (File).
func readYAML(r io.Reader) (File, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return File{}, err
	}
	if err := checkText(data); err != nil {
		return File{}, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return File{}, errors.New("the file is empty: a seed file is a list of skus, such as - {id: 1, name: Phone X, …}")
		}
		return File{}, yamlError(err)
	}
	var more yaml.Node
	switch err := dec.Decode(&more); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return File{}, yamlError(err)
	default:
		return File{}, fmt.Errorf("line %d: a second YAML document: a seed file is one document, one list of every sku", more.Line)
	}
	top := deref(doc.Content[0])
	d := decoder{merged: map[*yaml.Node][]pair{}, reading: map[*yaml.Node]bool{}}
	switch {
	case top.Kind == yaml.ScalarNode && top.Tag == "!!null":
		return File{}, errors.New("the file is empty: a seed file is a list of skus, such as - {id: 1, name: Phone X, …}")
	case top.Kind == yaml.MappingNode:
		return d.file(top)
	case top.Kind != yaml.SequenceNode:
		return File{}, fmt.Errorf("line %d: a seed file is a list of skus, each item - {id: 1, name: Phone X, …}, or a mapping {skus: […], drops: […]}, not %s",
			top.Line, describe(top))
	}
	rows, err := d.rows(top)
	return File{Rows: rows}, err
}

// yamlError is err of the YAML parser, naming its line: the parser names
// it but on the first line (checkText found the characters it refuses
// elsewhere).
func yamlError(err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if !strings.HasPrefix(msg, "line ") {
		msg = "line 1: " + msg
	}
	return errors.New(msg)
}

// checkText refuses, naming its line, what the YAML parser refuses without
// saying where: bytes that are not UTF-8, and the control characters YAML
// does not allow (all but tab, line feed and carriage return).
func checkText(data []byte) error {
	line := 1
	for len(data) > 0 {
		c, size := utf8.DecodeRune(data)
		switch {
		case c == utf8.RuneError && size <= 1:
			return fmt.Errorf("line %d: the file is not UTF-8 text", line)
		case c == '\n':
			line++
		case c == '\t', c == '\r', c == 0x85:
		case c < 0x20, c >= 0x7f && c < 0xa0, c >= 0xd800 && c < 0xe000, c == 0xfffe, c == 0xffff:
			return fmt.Errorf("line %d: the control character %U is not allowed in YAML", line, c)
		}
		data = data[size:]
	}
	return nil
}

// decoder reads the mappings of one file; merged keeps the fields of each
// mapping once read, so that merges ("<<: *base") that name one mapping
// many times cost one read of it, and reading holds those being read, so
// that a mapping that merges itself is refused at once.
type decoder struct {
	merged  map[*yaml.Node][]pair
	reading map[*yaml.Node]bool
}

type pair struct{ key, value *yaml.Node }

// spec is the SKU of the mapping m.
func (d *decoder) spec(m *yaml.Node) (catalog.Spec, error) {
	var s catalog.Spec
	if m.Kind != yaml.MappingNode {
		return s, fmt.Errorf("line %d: a sku is a mapping of its fields, such as {id: 1, name: Phone X}, not %s", m.Line, describe(m))
	}
	fields, err := d.pairs(m, 0)
	if err != nil {
		return s, err
	}
	for _, p := range fields {
		v := deref(p.value)
		if isNull(v) {
			continue // not given
		}
		var err error
		switch p.key.Value {
		case "id":
			var id int64
			if id, err = whole(v); err == nil && id < 0 {
				err = fmt.Errorf("want a whole number from 1 to %d, not %s", uint64(catalog.MaxID), v.Value)
			}
			s.ID = uint64(max(id, 0))
		case "name":
			s.Name, err = text(v)
		case "price_cents":
			s.PriceCents, err = wholePtr(v)
		case "stock":
			s.Stock, err = wholePtr(v)
		case "per_user_limit":
			var n int
			n, err = small(v)
			s.PerUserLimit = &n
		case "buckets":
			s.Buckets, err = small(v)
		case "starts_at":
			s.StartsAt, err = instant(v)
		case "ends_at":
			s.EndsAt, err = instant(v)
		case "hidden":
			s.Hidden, err = boolean(v)
		case "limit_counts_cancelled":
			s.LimitCountsCancelled, err = boolean(v)
		case "waiting_room":
			s.WaitingRoom, err = d.room(v)
			if err != nil {
				return s, err // names its own line and field
			}
		default:
			return s, fmt.Errorf("line %d: unknown field %q: a sku's fields are %s", p.key.Line, p.key.Value, strings.Join(Fields, ", "))
		}
		if err != nil {
			return s, fmt.Errorf("line %d: %s: %w", v.Line, p.key.Value, err)
		}
	}
	return s, nil
}

// room is the waiting room of the mapping m.
func (d *decoder) room(m *yaml.Node) (*catalog.RoomSpec, error) {
	if m.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: waiting_room is a mapping such as {opens_at: 2026-11-10T23:30:00Z}, not %s", m.Line, describe(m))
	}
	fields, err := d.pairs(m, 0)
	if err != nil {
		return nil, err
	}
	var r catalog.RoomSpec
	for _, p := range fields {
		v := deref(p.value)
		if isNull(v) {
			continue
		}
		var err error
		switch p.key.Value {
		case "opens_at":
			r.OpensAt, err = instant(v)
		case "mode":
			var mode *string
			mode, err = text(v)
			if mode != nil {
				r.Mode = *mode
			}
		case "admit_per_second":
			r.AdmitPerSecond, err = small(v)
		case "pass_ttl":
			ttl, perr := time.ParseDuration(v.Value)
			if perr != nil {
				err = fmt.Errorf("want a duration such as 60s, not %s", describe(v))
			}
			r.PassTTL = catalog.TTL(ttl)
		case "overbook":
			r.Overbook, err = number(v)
		case "pow_bits":
			r.PowBits, err = small(v)
		default:
			return nil, fmt.Errorf("line %d: unknown field \"waiting_room.%s\": a waiting_room's fields are %s", p.key.Line, p.key.Value, strings.Join(RoomFields, ", "))
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: waiting_room.%s: %w", v.Line, p.key.Value, err)
		}
	}
	return &r, nil
}

// maxMergeDepth bounds merges of merges: no seed file needs more.
const maxMergeDepth = 16

// pairs returns the fields of the mapping m: its own, then those of the
// mappings it merges ("<<: *base", or a list of them, the first given
// first) that it does not give itself. A field given twice is an error.
func (d *decoder) pairs(m *yaml.Node, depth int) ([]pair, error) {
	if out, ok := d.merged[m]; ok {
		return out, nil
	}
	if d.reading[m] {
		return nil, fmt.Errorf("line %d: a mapping that merges itself", m.Line)
	}
	if depth > maxMergeDepth {
		return nil, fmt.Errorf("line %d: merges nested more than %d deep", m.Line, maxMergeDepth)
	}
	d.reading[m] = true
	defer delete(d.reading, m)
	var out []pair
	given := map[string]bool{}
	var merges []*yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
			merges = append(merges, deref(v))
			continue
		}
		if k.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("line %d: a field's name is a word, not %s", k.Line, describe(k))
		}
		if given[k.Value] {
			return nil, fmt.Errorf("line %d: %s is given twice", k.Line, k.Value)
		}
		given[k.Value] = true
		out = append(out, pair{k, v})
	}
	for _, v := range merges {
		from := []*yaml.Node{v}
		if v.Kind == yaml.SequenceNode {
			from = v.Content
		}
		for _, src := range from {
			src = deref(src)
			if src.Kind != yaml.MappingNode {
				return nil, fmt.Errorf("line %d: << merges a mapping, not %s", src.Line, describe(src))
			}
			fields, err := d.pairs(src, depth+1)
			if err != nil {
				return nil, err
			}
			for _, p := range fields {
				if !given[p.key.Value] {
					given[p.key.Value] = true
					out = append(out, p)
				}
			}
		}
	}
	d.merged[m] = out
	return out, nil
}

// deref is the node an alias names, or n.
func deref(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// describe names what n is, for an error: its text, quoted when it is a
// string, or its kind.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!str" {
			return strconv.Quote(n.Value)
		}
		return n.Value
	}
	return "an alias"
}

// integer is the text of an integer, of any size.
var integer = regexp.MustCompile(`^[-+]?[0-9_]+$`)

// whole reads a whole number: an integer of YAML's, not a float however
// round, nor one past int64.
func whole(n *yaml.Node) (int64, error) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!int" {
		var v int64
		if n.Decode(&v) == nil {
			return v, nil
		}
		return 0, fmt.Errorf("%s is out of range", n.Value)
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!float" && integer.MatchString(n.Value) {
		return 0, fmt.Errorf("%s is out of range", n.Value)
	}
	return 0, fmt.Errorf("want a whole number, not %s", describe(n))
}

func wholePtr(n *yaml.Node) (*int64, error) {
	v, err := whole(n)
	return &v, err
}

// small reads a whole number of an int field: every such field's range
// fits in 32 bits.
func small(n *yaml.Node) (int, error) {
	v, err := whole(n)
	if err == nil && (v < math.MinInt32 || v > math.MaxInt32) {
		err = fmt.Errorf("%s is out of range", n.Value)
	}
	return int(v), err
}

// number reads a finite number.
func number(n *yaml.Node) (float64, error) {
	var v float64
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") || n.Decode(&v) != nil {
		return 0, fmt.Errorf("want a number, not %s", describe(n))
	}
	if !finite(v) {
		return 0, fmt.Errorf("want a finite number, not %s", n.Value)
	}
	return v, nil
}

func text(n *yaml.Node) (*string, error) {
	if n.Kind != yaml.ScalarNode {
		return nil, fmt.Errorf("want text, not %s", describe(n))
	}
	return &n.Value, nil
}

func boolean(n *yaml.Node) (*bool, error) {
	var v bool
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || n.Decode(&v) != nil {
		return nil, fmt.Errorf("want true or false, not %s", describe(n))
	}
	return &v, nil
}

// instant reads an RFC 3339 time.
func instant(n *yaml.Node) (*time.Time, error) {
	t, err := time.Parse(time.RFC3339, n.Value)
	if n.Kind != yaml.ScalarNode || err != nil {
		return nil, fmt.Errorf("want RFC 3339 such as 2026-11-11T00:00:00Z, not %s", describe(n))
	}
	return &t, nil
}
