package seedfile

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/catalog"
)

func specs(rows []Row) []catalog.Spec {
	out := make([]catalog.Spec, len(rows))
	for i, r := range rows {
		out[i] = r.Spec
	}
	return out
}

// readRows reads the SKUs of a seed file.
func readRows(r io.Reader, f Format) ([]Row, error) {
	file, err := Read(r, f)
	return file.Rows, err
}

func TestReadCSVAndYAMLGiveTheSameSKUs(t *testing.T) {
	fromCSV, err := readRows(strings.NewReader("id,name,stock,starts_at\n1,Phone X Pro,,\n2,,500,2026-11-11T00:00:00Z\n"), CSV)
	require.NoError(t, err)
	fromYAML, err := readRows(strings.NewReader("- {id: 1, name: Phone X Pro}\n- {id: 2, stock: 500, starts_at: 2026-11-11T00:00:00Z}\n"), YAML)
	require.NoError(t, err)
	require.Len(t, fromCSV, 2)
	assert.Equal(t, specs(fromYAML), specs(fromCSV))
	assert.Nil(t, fromCSV[0].Spec.Stock, "an empty cell is not given")
	assert.Equal(t, int64(500), *fromCSV[1].Spec.Stock)
	assert.Nil(t, fromCSV[1].Spec.Name)
	assert.Equal(t, []int{2, 3}, []int{fromCSV[0].Line, fromCSV[1].Line}, "a CSV row's line")
	assert.Equal(t, []int{1, 2}, []int{fromYAML[0].Line, fromYAML[1].Line}, "a YAML item's line")
}

// Every field of a YAML seed file, the waiting room's included, as the
// same SKU's CSV row gives it; a key null, as one left out, is not given.
func TestReadEveryField(t *testing.T) {
	fromYAML, err := readRows(strings.NewReader(`
- id: 7
  name: Phone X
  price_cents: 99900
  stock: 10
  per_user_limit: 2
  starts_at: 2026-11-11T00:00:00.5Z
  ends_at: 2026-11-11T01:00:00+08:00
  buckets: 1
  hidden: true
  limit_counts_cancelled: false
  waiting_room: {opens_at: 2026-11-10T23:30:00Z, mode: fifo, admit_per_second: 50, pass_ttl: 90s, overbook: 1.5, pow_bits: 12}
- {id: 8, name: ~, stock: null, waiting_room: null}
`), YAML)
	require.NoError(t, err)
	require.Len(t, fromYAML, 2)
	fromCSV, err := readRows(strings.NewReader(strings.Join(Columns, ",")+"\n"+
		"7,Phone X,99900,10,2,2026-11-11T00:00:00.5Z,2026-11-11T01:00:00+08:00,1,false,2026-11-10T23:30:00Z,fifo,50,90s,1.5,12\n"+
		"8,,,,,,,,,,,,,,\n"), CSV)
	require.NoError(t, err)
	want := fromCSV[0].Spec
	want.Hidden = new(true) // YAML only
	assert.Equal(t, want, fromYAML[0].Spec)
	assert.Equal(t, catalog.Spec{ID: 8}, fromYAML[1].Spec)
	assert.Equal(t, catalog.Spec{ID: 8}, fromCSV[1].Spec)
	assert.Equal(t, 500*time.Millisecond, time.Duration(fromYAML[0].Spec.StartsAt.Nanosecond()))
}

// YAML anchors and merges share fields between SKUs; a row's own field
// wins over a merged one.
func TestReadYAMLMerges(t *testing.T) {
	rows, err := readRows(strings.NewReader(`
- &base {id: 1, name: Phone, price_cents: 100, stock: 10}
- <<: *base
  id: 2
  stock: 20
- {<<: [*base, {per_user_limit: 3}], id: 3}
- *base
`), YAML)
	require.NoError(t, err)
	require.Len(t, rows, 4)
	assert.Equal(t, uint64(2), rows[1].Spec.ID)
	assert.Equal(t, int64(20), *rows[1].Spec.Stock)
	assert.Equal(t, int64(100), *rows[1].Spec.PriceCents)
	assert.Equal(t, 3, *rows[2].Spec.PerUserLimit)
	assert.Equal(t, uint64(1), rows[3].Spec.ID)
	assert.Equal(t, 7, rows[3].Line, "the line of the item, not of what it names")
}

func TestReadRefusals(t *testing.T) {
	for name, tc := range map[string]struct {
		text string
		f    Format
		err  string
	}{
		"unknown column": {"id,colour\n1,red\n", CSV,
			`line 1: unknown column "colour": the columns are id, name, price_cents, stock, per_user_limit, starts_at, ends_at, buckets, ` +
				`limit_counts_cancelled, room_opens_at, room_mode, room_admit_per_second, room_pass_ttl, room_overbook, room_pow_bits`},
		"column twice":   {"id,id\n1,1\n", CSV, `line 1: column "id" twice`},
		"bad number":     {"id,stock\n1,many\n", CSV, `line 2: stock: want a whole number, not "many"`},
		"csv fraction":   {"id,stock\n1,10.9\n", CSV, `line 2: stock: want a whole number, not "10.9"`},
		"csv overflow":   {"id,stock\n1,9223372036854775808\n", CSV, `line 2: stock: 9223372036854775808 is out of range`},
		"csv id":         {"id\n-1\n", CSV, `line 2: id: want a whole number from 1 to 9223372036854775807, not "-1"`},
		"csv limit":      {"per_user_limit\n4294967296\n", CSV, `line 2: per_user_limit: 4294967296 is out of range`},
		"every problem":  {"id,stock,price_cents\n1,x,y\n", CSV, `line 2: price_cents: want a whole number, not "y"; stock: want a whole number, not "x"`},
		"bad time":       {"id,starts_at\n1,tomorrow\n", CSV, `line 2: starts_at: want RFC 3339 such as 2026-11-11T00:00:00Z, not "tomorrow"`},
		"room without":   {"id,room_mode\n1,fifo\n", CSV, "line 2: room_mode: a waiting room needs room_opens_at"},
		"csv nan":        {"room_opens_at,room_overbook\n2026-11-11T00:00:00Z,NaN\n", CSV, `line 2: room_overbook: want a finite number, not "NaN"`},
		"csv inf":        {"room_opens_at,room_overbook\n2026-11-11T00:00:00Z,-Inf\n", CSV, `line 2: room_overbook: want a finite number, not "-Inf"`},
		"csv 1e400":      {"room_opens_at,room_overbook\n2026-11-11T00:00:00Z,1e400\n", CSV, `line 2: room_overbook: want a finite number, not "1e400"`},
		"csv ttl":        {"room_opens_at,room_pass_ttl\n2026-11-11T00:00:00Z,99999999999h\n", CSV, `line 2: room_pass_ttl: want a duration such as 60s, not "99999999999h"`},
		"csv cells":      {"id,name\n1,a\n2\n", CSV, "line 3: 1 cells, and the header names 2 columns"},
		"csv quote":      {"id,name\n1,a\"b\n", CSV, `line 2, column 4: bare " in non-quoted-field`},
		"empty csv":      {"", CSV, "the file is empty: a CSV seed file starts with a header row"},
		"empty yaml":     {"", YAML, "the file is empty: a seed file is a list of skus"},
		"comments only":  {"# skus\n", YAML, "the file is empty"},
		"null yaml":      {"~\n", YAML, "the file is empty"},
		"yaml mapping":   {"id: 1\nname: Phone\n", YAML, `line 1: unknown field "id": a seed file is a list of skus, each item - {id: 1, name: Phone X, …}, or a mapping of its skus and drops`},
		"yaml scalar":    {"skus\n", YAML, `line 1: a seed file is a list of skus, each item - {id: 1, name: Phone X, …}, or a mapping {skus: […], drops: […]}, not "skus"`},
		"drops not list": {"skus: [{id: 1}]\ndrops: {name: x}\n", YAML, "line 2: drops is a list, not a mapping"},
		"drop field":     {"drops: [{name: x, size: 42}]\n", YAML, `line 1: unknown field "size": a drop's fields are name, skus, per_user_limit, waiting_room`},
		"drop skus":      {"drops: [{name: x, skus: [1, -2]}]\n", YAML, "line 1: skus: want sku ids from 1 to 9223372036854775807, not -2"},
		"drop room":      {"drops: [{name: x, waiting_room: {opens: 1}}]\n", YAML, `line 1: unknown field "waiting_room.opens"`},
		"nothing":        {"skus: []\ndrops: ~\n", YAML, "line 1: the file names no sku and no drop"},
		"item a list":    {"- [1, 2]\n", YAML, "line 1: a sku is a mapping of its fields, such as {id: 1, name: Phone X}, not a list"},
		"yaml syntax":    {"- {id: 1\n", YAML, "line 1: did not find expected ',' or '}'"},
		"two documents":  {"- {id: 1}\n---\n- {id: 2}\n", YAML, "line 2: a second YAML document: a seed file is one document"},
		"empty second":   {"- {id: 1}\n---\n", YAML, "line 2: a second YAML document"},
		"garbage after":  {"- {id: 1}\n---\n{{{\n", YAML, "line 3: did not find expected node content"},
		"unknown key":    {"- {id: 1,\n   price: 5}\n", YAML, `line 2: unknown field "price": a sku's fields are id, name, price_cents, stock, per_user_limit, starts_at, ends_at, buckets, hidden, limit_counts_cancelled, waiting_room`},
		"unknown room":   {"- {id: 1, waiting_room: {size: 5}}\n", YAML, `line 1: unknown field "waiting_room.size": a waiting_room's fields are opens_at, mode, admit_per_second, pass_ttl, overbook, pow_bits`},
		"key twice":      {"- {id: 1, stock: 2, stock: 3}\n", YAML, "line 1: stock is given twice"},
		"price fraction": {"- {price_cents: 0.99}\n", YAML, "line 1: price_cents: want a whole number, not 0.99"},
		"stock fraction": {"- {stock: 10.9}\n", YAML, "line 1: stock: want a whole number, not 10.9"},
		"limit fraction": {"- {per_user_limit: 1.7}\n", YAML, "line 1: per_user_limit: want a whole number, not 1.7"},
		"round float":    {"- {stock: 10.0}\n", YAML, "line 1: stock: want a whole number, not 10.0"},
		"exponent":       {"- {stock: 1e3}\n", YAML, "line 1: stock: want a whole number, not 1e3"},
		"quoted number":  {"- {stock: \"10\"}\n", YAML, `line 1: stock: want a whole number, not "10"`},
		"id fraction":    {"- {id: 1.5}\n", YAML, "line 1: id: want a whole number, not 1.5"},
		"negative id":    {"- {id: -1}\n", YAML, "line 1: id: want a whole number from 1 to 9223372036854775807, not -1"},
		"id overflow":    {"- {id: 18446744073709551616}\n", YAML, "line 1: id: 18446744073709551616 is out of range"},
		"int64 overflow": {"- {stock: 9223372036854775808}\n", YAML, "line 1: stock: 9223372036854775808 is out of range"},
		"int overflow":   {"- {buckets: 2147483648}\n", YAML, "line 1: buckets: 2147483648 is out of range"},
		"huge negative":  {"- {price_cents: -99999999999999999999}\n", YAML, "line 1: price_cents: -99999999999999999999 is out of range"},
		"admit fraction": {"- {waiting_room: {admit_per_second: 2.5}}\n", YAML, "line 1: waiting_room.admit_per_second: want a whole number, not 2.5"},
		"nan":            {"- {waiting_room: {overbook: .nan}}\n", YAML, "line 1: waiting_room.overbook: want a finite number, not .nan"},
		"inf":            {"- {waiting_room: {overbook: .inf}}\n", YAML, "line 1: waiting_room.overbook: want a finite number, not .inf"},
		"minus inf":      {"- {waiting_room: {overbook: -.Inf}}\n", YAML, "line 1: waiting_room.overbook: want a finite number, not -.Inf"},
		"overbook text":  {"- {waiting_room: {overbook: much}}\n", YAML, `line 1: waiting_room.overbook: want a number, not "much"`},
		"ttl":            {"- {waiting_room: {pass_ttl: 60}}\n", YAML, "line 1: waiting_room.pass_ttl: want a duration such as 60s, not 60"},
		"ttl overflow":   {"- {waiting_room: {pass_ttl: 9999999999h}}\n", YAML, `line 1: waiting_room.pass_ttl: want a duration such as 60s, not "9999999999h"`},
		"room a list":    {"- {waiting_room: [1]}\n", YAML, "line 1: waiting_room is a mapping such as {opens_at: 2026-11-10T23:30:00Z}, not a list"},
		"yaml time":      {"- {starts_at: 2026-11-11}\n", YAML, "line 1: starts_at: want RFC 3339 such as 2026-11-11T00:00:00Z, not 2026-11-11"},
		"bool":           {"- {hidden: yes}\n", YAML, `line 1: hidden: want true or false, not "yes"`},
		"name a list":    {"- {name: [a]}\n", YAML, "line 1: name: want text, not a list"},
		"merge a list":   {"- {<<: [1], id: 1}\n", YAML, "line 1: << merges a mapping, not 1"},
	} {
		_, err := readRows(strings.NewReader(tc.text), tc.f)
		if assert.Error(t, err, name) {
			assert.Contains(t, err.Error(), tc.err, name)
		}
	}
}

// The mapping form of a YAML file gives SKUs and the drops made of them,
// each with its line.
func TestReadDrops(t *testing.T) {
	f, err := Read(strings.NewReader(`
skus:
  - {id: 41, name: Runner 2 size 41}
  - {id: 42, name: Runner 2 size 42}
drops:
  - name: Runner 2
    skus: [41, 42]
    per_user_limit: 1
    waiting_room: {opens_at: 2026-11-10T23:30:00Z, admit_per_second: 50}
`), YAML)
	require.NoError(t, err)
	require.Len(t, f.Rows, 2)
	require.Len(t, f.Drops, 1)
	d := f.Drops[0]
	assert.Equal(t, 6, d.Line)
	assert.Equal(t, "Runner 2", d.Spec.Name)
	assert.Equal(t, []uint64{41, 42}, d.Spec.SKUs)
	assert.Equal(t, 1, d.Spec.PerUserLimit)
	assert.Equal(t, 50, d.Spec.WaitingRoom.AdmitPerSecond)
	assert.Equal(t, `line 6 (drop "Runner 2")`, d.Name())
}

// A number that is negative zero is zero: for overbook, not given.
func TestReadNegativeZero(t *testing.T) {
	rows, err := readRows(strings.NewReader("- {waiting_room: {opens_at: 2026-11-11T00:00:00Z, overbook: -0.0}, stock: -0}\n"), YAML)
	require.NoError(t, err)
	assert.Zero(t, rows[0].Spec.WaitingRoom.Overbook)
	assert.Equal(t, int64(0), *rows[0].Spec.Stock)
}

func TestFormatOf(t *testing.T) {
	assert.Equal(t, CSV, FormatOf("skus.CSV"))
	assert.Equal(t, YAML, FormatOf("skus.yaml"))
	assert.Equal(t, YAML, FormatOf("skus"))
}

func TestRowNameAndNeedsAll(t *testing.T) {
	name := "Gift"
	assert.Equal(t, `line 4 (id 2, "Gift")`, Row{Spec: catalog.Spec{ID: 2, Name: &name}, Line: 4}.Name())
	assert.Equal(t, "line 4", Row{Line: 4}.Name())
	assert.Equal(t, "sku 2", Row{Spec: catalog.Spec{ID: 2}}.Name())
	assert.Equal(t, `sku 2 ("Gift")`, Row{Spec: catalog.Spec{ID: 2, Name: &name}}.Name())
	assert.Equal(t, `"Gift"`, Row{Spec: catalog.Spec{Name: &name}}.Name())
	assert.Equal(t, "the sku", Row{}.Name())

	err := NeedsAll(Row{Spec: catalog.Spec{ID: 2, Name: &name}, Line: 4})
	require.ErrorIs(t, err, catalog.ErrInvalid)
	assert.EqualError(t, err, `line 4 (id 2, "Gift"): a new sku needs price_cents, stock, per_user_limit, starts_at, ends_at; `+
		"a field left out is not 0 (give price_cents 0 for a free sale)")
	err = NeedsAll(Row{Spec: catalog.Spec{Name: &name}})
	assert.ErrorContains(t, err, `"Gift": a new sku needs price_cents (--price-cents)`)
}

// A mapping that merges itself, many times over, is refused at once.
func TestReadYAMLMergeOfItself(t *testing.T) {
	_, err := readRows(strings.NewReader("- &a {id: 1, <<: [*a, *a, *a, *a, *a, *a, *a, *a]}\n"), YAML)
	assert.ErrorContains(t, err, "line 1: a mapping that merges itself")
}
