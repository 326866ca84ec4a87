package cli

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// storedSKU is a SKU's row as seed left it.
type storedSKU struct {
	Name                string
	Price, Stock, Limit int64
	StartsAt, EndsAt    time.Time
	Buckets             int
}

func readSKU(t *testing.T, db *sql.DB, id int) storedSKU {
	t.Helper()
	var s storedSKU
	var starts, ends string
	require.NoError(t, db.QueryRow("SELECT name, price_cents, stock_total, per_user_limit, buckets, "+
		"DATE_FORMAT(starts_at, '%Y-%m-%dT%H:%i:%sZ'), DATE_FORMAT(ends_at, '%Y-%m-%dT%H:%i:%sZ') FROM skus WHERE id = ?", id).
		Scan(&s.Name, &s.Price, &s.Stock, &s.Limit, &s.Buckets, &starts, &ends))
	var err error
	s.StartsAt, err = time.Parse(time.RFC3339, starts)
	require.NoError(t, err)
	s.EndsAt, err = time.Parse(time.RFC3339, ends)
	require.NoError(t, err)
	return s
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

const (
	seedStart = "2026-11-11T00:00:00Z"
	seedEnd   = "2036-11-11T01:00:00Z"
)

// A new SKU needs every required field, from flags, YAML keys or CSV
// cells: a seed without one exits 2 naming it and writes nothing, not even
// the other SKUs of its file. A price of 0 is taken only when given.
func TestSeedOfANewSKUNeedsEveryRequiredField(t *testing.T) {
	run, db := onServices(t)
	count := func() int64 {
		t.Helper()
		var n int64
		require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM skus").Scan(&n))
		return n
	}
	full := []string{"--name", "Phone", "--price-cents", "99900", "--stock", "10", "--per-user-limit", "1",
		"--starts-at", seedStart, "--ends-at", seedEnd}
	without := func(flag string) []string {
		var out []string
		for i := 0; i < len(full); i += 2 {
			if full[i] != flag {
				out = append(out, full[i], full[i+1])
			}
		}
		return out
	}

	_, err := run("seed", "--id", "2", "--name", "Oops", "--stock", "10")
	require.Error(t, err, "a live, free sale starting now")
	assert.Equal(t, ExitBadConfig, ExitCode(err), "%v", err)
	for _, name := range []string{"price_cents", "per_user_limit", "starts_at", "ends_at"} {
		assert.ErrorContains(t, err, name)
	}
	for _, flag := range []string{"--name", "--price-cents", "--stock", "--per-user-limit", "--starts-at", "--ends-at"} {
		for _, id := range [][]string{nil, {"--id", "3"}} {
			_, err := run(append(append([]string{"seed"}, id...), without(flag)...)...)
			assert.Equal(t, ExitBadConfig, ExitCode(err), "%s left out (%v): %v", flag, id, err)
			assert.ErrorContains(t, err, flag[2:], "the error names %s", flag)
		}
	}
	_, err = run("seed", "--file", writeFile(t, "new.yaml", `
- {id: 4, name: A, price_cents: 1, stock: 3, per_user_limit: 1, starts_at: `+seedStart+`, ends_at: `+seedEnd+`}
- {id: 5, name: B, stock: 3, per_user_limit: 1, starts_at: `+seedStart+`, ends_at: `+seedEnd+`}
`))
	assert.Equal(t, ExitBadConfig, ExitCode(err), "%v", err)
	assert.ErrorContains(t, err, "price_cents")
	_, err = run("seed", "--file", writeFile(t, "new.csv", "id,name,price_cents,stock,per_user_limit,starts_at,ends_at\n"+
		"6,A,1,3,1,"+seedStart+","+seedEnd+"\n7,B,,3,1,"+seedStart+","+seedEnd+"\n"))
	assert.Equal(t, ExitBadConfig, ExitCode(err), "an empty cell is not given: %v", err)
	assert.ErrorContains(t, err, "price_cents")
	_, err = run("seed", "--file", writeFile(t, "short.csv", "id,name,stock\n8,A,3\n"))
	assert.Equal(t, ExitBadConfig, ExitCode(err), "%v", err)
	assert.ErrorContains(t, err, "price_cents")
	assert.Zero(t, count(), "the refused seeds wrote nothing")

	out, err := run(append([]string{"seed", "--id", "9", "--price-cents", "0"}, without("--price-cents")...)...)
	require.NoError(t, err, "--price-cents 0 said")
	assert.Contains(t, out, `"price_cents":0`)
	assert.Contains(t, out, `"stock":10`)
	_, err = run("seed", "--file", writeFile(t, "free.yaml", "- {id: 10, name: Free, price_cents: 0, stock: 3, per_user_limit: 1, starts_at: "+seedStart+", ends_at: "+seedEnd+"}\n"))
	require.NoError(t, err, "price_cents: 0 said")
	assert.Equal(t, int64(0), readSKU(t, db, 10).Price)
}

// Seeding an id that exists changes only the flags, YAML keys or CSV cells
// given; what is left out (an absent key, an empty cell) is kept.
func TestSeedOfAnExistingSKUChangesOnlyWhatIsGiven(t *testing.T) {
	run, db := onServices(t)
	_, err := run("seed", "--id", "5", "--name", "Phone", "--price-cents", "99900", "--stock", "10", "--per-user-limit", "2",
		"--buckets", "2", "--starts-at", seedStart, "--ends-at", seedEnd)
	require.NoError(t, err)
	want := readSKU(t, db, 5)
	assert.Equal(t, storedSKU{Name: "Phone", Price: 99900, Stock: 10, Limit: 2, Buckets: 2,
		StartsAt: time.Date(2026, 11, 11, 0, 0, 0, 0, time.UTC), EndsAt: time.Date(2036, 11, 11, 1, 0, 0, 0, time.UTC)}, want)

	out, err := run("seed", "--id", "5", "--name", "Renamed")
	require.NoError(t, err, "a rename by flag")
	assert.Contains(t, out, `"created":false`)
	want.Name = "Renamed"
	assert.Equal(t, want, readSKU(t, db, 5), "only the name changed")

	_, err = run("seed", "--file", writeFile(t, "stock.yaml", "- {id: 5, stock: 20}\n"))
	require.NoError(t, err, "a top-up by YAML")
	want.Stock = 20
	assert.Equal(t, want, readSKU(t, db, 5), "only the stock changed")

	_, err = run("seed", "--file", writeFile(t, "limit.csv", "id,name,price_cents,stock,per_user_limit,starts_at,ends_at,buckets\n5,,,,7,,,\n"))
	require.NoError(t, err, "a new limit by CSV")
	want.Limit = 7
	assert.Equal(t, want, readSKU(t, db, 5), "only the limit changed: empty cells are not given")

	_, err = run("seed", "--file", writeFile(t, "name.csv", "id,name\n5,Phone X\n"))
	require.NoError(t, err, "a CSV file with only the columns it changes")
	want.Name = "Phone X"
	assert.Equal(t, want, readSKU(t, db, 5))

	_, err = run("seed", "--id", "5", "--price-cents", "0")
	require.NoError(t, err)
	want.Price = 0
	assert.Equal(t, want, readSKU(t, db, 5), "a price of 0 when said")

	for _, bad := range [][]string{
		{"seed", "--id", "5", "--ends-at", "2020-01-01T00:00:00Z"},
		{"seed", "--id", "5", "--name", " "},
		{"seed", "--file", writeFile(t, "typo.csv", "id,name,price_cent\n5,X,1\n")},
	} {
		_, err := run(bad...)
		assert.Equal(t, ExitBadConfig, ExitCode(err), "%v: %v", bad, err)
	}
	_, err = run("seed", "--id", "5", "--stock", "1", "--buckets", "4")
	assert.Equal(t, ExitFailure, ExitCode(err), "%v", err)
	// A file whose last row SKU 5 refuses (its window would end before it
	// starts) writes none of its rows.
	_, err = run("seed", "--file", writeFile(t, "late.yaml", "- {id: 5, stock: 30}\n- {id: 5, starts_at: 2037-01-01T00:00:00Z}\n"))
	assert.Equal(t, ExitBadConfig, ExitCode(err), "%v", err)
	assert.Equal(t, want, readSKU(t, db, 5), "the refused seeds wrote nothing")
}

// seedRow is a YAML row of a new SKU with every required field and the
// fields more gives (YAML flow style).
func seedRow(more string) string {
	fields := []string{more, "price_cents: 100, stock: 10, per_user_limit: 1, starts_at: " + seedStart + ", ends_at: " + seedEnd}
	if !strings.Contains(more, "name:") {
		fields = append(fields, "name: Row")
	}
	return "- {" + strings.Join(fields, ", ") + "}\n"
}

// seed refuses what POST /admin/seed refuses, with an error that names the
// file's line and the field, exit 2, and writes nothing: a fraction where
// a whole number goes, a second YAML document or anything unparsable after
// the first, a number that is not finite or out of range, an unknown field.
func TestSeedFileRefusalsNameTheLineAndWriteNothing(t *testing.T) {
	run, db := onServices(t)
	_, err := run("migrate")
	require.NoError(t, err)
	csvHead := "id,name,price_cents,stock,per_user_limit,starts_at,ends_at,room_opens_at,room_overbook\n"
	csvRow := func(id int, overbook string) string {
		return fmt.Sprintf("%d,Row,100,10,1,%s,%s,2026-11-10T00:00:00Z,%s\n", id, seedStart, seedEnd, overbook)
	}
	for _, tc := range []struct{ name, file, body, line, field string }{
		{"fraction", "a.yaml", seedRow("id: 1") + "- {name: Cheap, price_cents: 0.99, stock: 10.9, per_user_limit: 1.7, starts_at: " + seedStart + ", ends_at: " + seedEnd + "}\n", "line 2", "price_cents"},
		{"two documents", "b.yaml", seedRow("id: 1") + "---\n" + seedRow("id: 2"), "line 2", "document"},
		{"garbage", "c.yaml", seedRow("id: 1") + "---\n{{{\n", "line ", ""},
		{"yaml nan", "d.yaml", seedRow("id: 1") + seedRow("id: 2, waiting_room: {opens_at: 2026-11-10T00:00:00Z, overbook: .nan}"), "line 2", "overbook"},
		{"csv nan", "e.csv", csvHead + csvRow(1, "1.5") + csvRow(2, "NaN"), "line 3", "overbook"},
		{"overflow", "f.yaml", seedRow("id: 1") + seedRow("id: 2, stock: 9223372036854775808"), "line 2", "stock"},
		{"unknown", "g.yaml", seedRow("id: 1") + seedRow("id: 2, price: 5"), "line 2", "price_cents"},
	} {
		_, err = run("seed", "--file", writeFile(t, tc.file, tc.body))
		require.Error(t, err, tc.name)
		assert.Equal(t, ExitBadConfig, ExitCode(err), "%s: %v", tc.name, err)
		assert.ErrorContains(t, err, tc.file+": "+tc.line, tc.name)
		assert.ErrorContains(t, err, tc.field, tc.name)
	}
	var n int64
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM skus").Scan(&n))
	assert.Zero(t, n, "the refused files wrote nothing")
}

// A row of a seed file without an id gets one that no row of the file
// names: no row overwrites another.
func TestSeedFileRowsDoNotOverwriteEachOther(t *testing.T) {
	run, db := onServices(t)
	_, err := run("seed", "--file", writeFile(t, "one.yaml", seedRow("name: Zero")))
	require.NoError(t, err)
	var top int
	require.NoError(t, db.QueryRow("SELECT MAX(id) FROM skus").Scan(&top))
	out, err := run("seed", "--file", writeFile(t, "two.yaml", seedRow("name: First")+seedRow(fmt.Sprintf("id: %d, name: Second", top+1))))
	require.NoError(t, err)
	assert.Equal(t, 2, strings.Count(out, `"created":true`), out)
	var n int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM skus").Scan(&n))
	assert.Equal(t, 3, n, "both rows are SKUs")
	assert.Equal(t, "Second", readSKU(t, db, top+1).Name)
	var first int
	require.NoError(t, db.QueryRow("SELECT id FROM skus WHERE name = 'First'").Scan(&first))
	assert.NotEqual(t, top+1, first)
}

// seed --help names every field a seed file takes, the CSV columns and the
// YAML keys of a SKU and of its waiting room, as docs/admin/seed-files.md does.
func TestSeedHelpNamesEveryField(t *testing.T) {
	help := seedCmd(&env{}).Long
	readme, err := os.ReadFile("../../docs/admin/seed-files.md")
	require.NoError(t, err)
	fields := []string{"id", "name", "price_cents", "stock", "per_user_limit", "starts_at", "ends_at", "buckets",
		"limit_counts_cancelled", "room_opens_at", "room_mode", "room_admit_per_second", "room_pass_ttl", "room_overbook",
		"hidden", "waiting_room", "opens_at", "mode", "admit_per_second", "pass_ttl", "overbook"}
	for _, f := range fields {
		assert.Regexp(t, `\b`+f+`\b`, help, "seed --help names %s", f)
		assert.Contains(t, string(readme), "`"+f, "docs/admin/seed-files.md names %s", f)
	}
}
