package app

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/testutil"
)

// seedFile posts a seed file of content type ct to instance 0.
func (s *deployment) seedFile(ct, body string) testutil.Reply {
	s.t.Helper()
	c := s.caller()
	req, err := c.Request(s.urls[0], "POST", "/admin/seed", "", body)
	require.NoError(s.t, err)
	req.Header.Set("Content-Type", ct)
	r, err := c.Send(req)
	require.NoError(s.t, err)
	return r
}

// POST /admin/seed takes the files `seckill seed --file` reads, checks
// every SKU before writing any, and writes them as POST /admin/skus does.
func TestSeedAFileOverTheAdminAPI(t *testing.T) {
	check := func(t *testing.T, s *deployment) {
		starts := time.Now().UTC().Truncate(time.Second)
		ends := starts.Add(time.Hour)
		csv := fmt.Sprintf("id,name,price_cents,stock,per_user_limit,starts_at,ends_at\n"+
			"7001,Phone X,99900,10,1,%[1]s,%[2]s\n7002,Gift,0,100,2,%[1]s,%[2]s\n", starts.Format(time.RFC3339), ends.Format(time.RFC3339))
		r := s.seedFile("text/csv", csv)
		require.Equal(t, http.StatusOK, r.Status, r.Raw)
		items, _ := r.Body["items"].([]any)
		require.Len(t, items, 2)
		first := items[0].(map[string]any)
		assert.Equal(t, true, first["created"])
		assert.Equal(t, "Phone X", first["sku"].(map[string]any)["name"])

		// A re-seed in YAML changes only what it names.
		r = s.seedFile("application/yaml", "- {id: 7001, name: Phone X Pro}\n- {id: 7002, stock: 150}\n")
		require.Equal(t, http.StatusOK, r.Status, r.Raw)
		items, _ = r.Body["items"].([]any)
		require.Len(t, items, 2)
		sku := items[0].(map[string]any)["sku"].(map[string]any)
		assert.Equal(t, false, items[0].(map[string]any)["created"])
		assert.Equal(t, "Phone X Pro", sku["name"])
		assert.EqualValues(t, 10, sku["stock"], "the stock is kept")
		assert.EqualValues(t, 150, items[1].(map[string]any)["sku"].(map[string]any)["stock"])

		// A new SKU without every field: refused by name, nothing written.
		r = s.seedFile("application/yaml", "- {id: 7001, stock: 11}\n- {id: 7003, name: Oops}\n")
		assert.Equal(t, http.StatusBadRequest, r.Status, r.Raw)
		assert.Equal(t, "invalid_request", r.Str("error"))
		assert.Contains(t, r.Str("detail"), `line 2 (id 7003, "Oops"): a new sku needs price_cents`)
		got := s.do(0, "GET", "/api/v1/skus/7001", "", nil)
		assert.EqualValues(t, 10, got.Num("stock"), "the first SKU of a refused file is not written")

		r = s.seedFile("text/csv", "id,colour\n1,red\n")
		assert.Equal(t, http.StatusBadRequest, r.Status, r.Raw)
		assert.Contains(t, r.Str("detail"), `unknown column "colour"`)
		r = s.seedFile("application/json", "[]")
		assert.Equal(t, http.StatusUnsupportedMediaType, r.Status, r.Raw)
		assert.Equal(t, "text/csv, application/yaml", r.Header.Get("Accept-Post"))
	}
	t.Run("mysql", func(t *testing.T) { check(t, startSale(t, saleOpts{})) })
	t.Run("embedded", func(t *testing.T) { check(t, startSale(t, saleOpts{embedded: true})) })
}

// A seed is judged whole before anything is written, also where only the
// stored SKU, or an earlier row of the same file, shows a row is refused:
// nothing is written, not even the SKUs before it.
func TestASeedRefusedByWhatASKUHoldsWritesNothing(t *testing.T) {
	s := startSale(t, saleOpts{})
	now := time.Now().UTC().Truncate(time.Second)
	r := s.do(0, "POST", "/admin/skus", "", skuBody(map[string]any{"id": 9101}))
	require.Equal(t, http.StatusCreated, r.Status, r.Raw)
	newSKU := func(id int) string {
		return fmt.Sprintf("- {id: %d, name: New, price_cents: 1, stock: 1, per_user_limit: 1, starts_at: %s, ends_at: %s}\n",
			id, now.Format(time.RFC3339), now.Add(time.Hour).Format(time.RFC3339))
	}

	// 9101 ends before the start the file gives it.
	r = s.seedFile("application/yaml", newSKU(9102)+fmt.Sprintf("- {id: 9101, starts_at: %s}\n", now.Add(30*24*time.Hour).Format(time.RFC3339)))
	assert.Equal(t, http.StatusBadRequest, r.Status, r.Raw)
	assert.Contains(t, r.Str("detail"), "line 2 (id 9101)")
	assert.Contains(t, r.Str("detail"), "ends_at must be after starts_at")
	// 9103 is new, and the file then gives it another bucket count.
	r = s.seedFile("application/yaml", newSKU(9102)+newSKU(9103)+"- {id: 9103, buckets: 3}\n")
	assert.Equal(t, http.StatusConflict, r.Status, r.Raw)
	assert.Equal(t, "buckets_fixed", r.Str("error"), r.Raw)

	for _, id := range []int{9102, 9103} {
		got := s.do(0, "GET", fmt.Sprintf("/api/v1/skus/%d", id), "", nil)
		assert.Equal(t, http.StatusNotFound, got.Status, "a refused seed wrote sku %d: %s", id, got.Raw)
	}
	// The same file without its bad rows is written whole.
	r = s.seedFile("application/yaml", newSKU(9102)+newSKU(9103)+"- {id: 9103, stock: 5}\n")
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	assert.EqualValues(t, 5, s.do(0, "GET", "/api/v1/skus/9103", "", nil).Num("stock"))
}

// seedWindow is a YAML sale window of a SKU on sale for the next hour.
func seedWindow() string {
	now := time.Now().UTC().Truncate(time.Second)
	return fmt.Sprintf("starts_at: %s, ends_at: %s", now.Add(-time.Minute).Format(time.RFC3339), now.Add(time.Hour).Format(time.RFC3339))
}

// newRow is a YAML row of a new SKU with every required field, and the
// fields more gives (YAML flow style, e.g. "id: 5").
func newRow(more string) string {
	fields := []string{"price_cents: 100, stock: 10, per_user_limit: 1, " + seedWindow()}
	if !strings.Contains(more, "name:") {
		fields = append(fields, "name: Row")
	}
	if more != "" {
		fields = append(fields, more)
	}
	return "- {" + strings.Join(fields, ", ") + "}\n"
}

// The numbers of a seed file are whole numbers wherever a SKU's field is
// one: a fraction is refused naming its line and field, in YAML as in CSV,
// and nothing is written.
func TestSeedFileRefusesFractionsOfWholeNumbers(t *testing.T) {
	s := startSale(t, saleOpts{})
	for _, tc := range []struct{ field, row string }{
		{"price_cents", "- {name: Cheap, price_cents: 0.99, stock: 10, per_user_limit: 1, " + seedWindow() + "}\n"},
		{"stock", "- {name: Cheap, price_cents: 99, stock: 10.9, per_user_limit: 1, " + seedWindow() + "}\n"},
		{"per_user_limit", "- {name: Cheap, price_cents: 99, stock: 10, per_user_limit: 1.7, " + seedWindow() + "}\n"},
		{"buckets", newRow("buckets: 2.5")},
		{"id", newRow("id: 9201.5")},
		{"admit_per_second", newRow("waiting_room: {opens_at: 2020-01-01T00:00:00Z, admit_per_second: 2.5}")},
	} {
		r := s.seedFile("application/yaml", newRow("id: 9200")+tc.row)
		assert.Equal(t, http.StatusBadRequest, r.Status, "%s: %s", tc.field, r.Raw)
		assert.Equal(t, "invalid_request", r.Str("error"), r.Raw)
		assert.Contains(t, r.Str("detail"), "line 2", r.Raw)
		assert.Contains(t, r.Str("detail"), tc.field, r.Raw)
		assert.Contains(t, r.Str("detail"), "whole number", r.Raw)
	}
	assert.Zero(t, s.skuCount(), "a refused file writes nothing")
}

// A YAML seed file is one document: a second one, or anything after the
// first that does not parse, is refused and nothing is written.
func TestSeedFileIsOneYAMLDocument(t *testing.T) {
	s := startSale(t, saleOpts{})
	for name, body := range map[string]string{
		"two documents":    newRow("id: 9301") + "---\n" + newRow("id: 9302"),
		"trailing garbage": newRow("id: 9301") + "---\n{{{ not yaml\n",
		"a second list":    "---\n" + newRow("id: 9301") + "--- [1, 2]\n",
	} {
		r := s.seedFile("application/yaml", body)
		assert.Equal(t, http.StatusBadRequest, r.Status, "%s: %s", name, r.Raw)
		assert.Equal(t, "invalid_request", r.Str("error"), r.Raw)
		assert.Regexp(t, `line \d`, r.Str("detail"), r.Raw)
	}
	assert.Zero(t, s.skuCount(), "a refused file writes nothing")
	r := s.seedFile("application/yaml", "---\n"+newRow("id: 9301")+"...\n")
	assert.Equal(t, http.StatusOK, r.Status, "one document, marked: %s", r.Raw)
}

// A waiting room's overbook that is not a number (NaN), or not finite, is
// refused naming the row, before anything is written; so is every other
// numeric field out of range.
func TestSeedFileRefusesNaNAndOutOfRangeNumbers(t *testing.T) {
	check := func(t *testing.T, s *deployment) {
		opens := "2020-01-01T00:00:00Z"
		csvHead := "id,name,price_cents,stock,per_user_limit,starts_at,ends_at,room_opens_at,room_overbook\n"
		now := time.Now().UTC().Truncate(time.Second)
		csvRow := func(id int, overbook string) string {
			return fmt.Sprintf("%d,Row,100,10,1,%s,%s,%s,%s\n", id, now.Add(-time.Minute).Format(time.RFC3339),
				now.Add(time.Hour).Format(time.RFC3339), opens, overbook)
		}
		for _, tc := range []struct{ name, ct, body, field string }{
			{"yaml .nan", "application/yaml", newRow("id: 9401") + newRow("id: 9402, waiting_room: {opens_at: "+opens+", overbook: .nan}"), "overbook"},
			{"yaml .inf", "application/yaml", newRow("id: 9401") + newRow("id: 9402, waiting_room: {opens_at: "+opens+", overbook: .inf}"), "overbook"},
			{"yaml -.inf", "application/yaml", newRow("id: 9401") + newRow("id: 9402, waiting_room: {opens_at: "+opens+", overbook: -.Inf}"), "overbook"},
			{"csv NaN", "text/csv", csvHead + csvRow(9401, "1.5") + csvRow(9402, "NaN"), "overbook"},
			{"csv Inf", "text/csv", csvHead + csvRow(9401, "1.5") + csvRow(9402, "+Inf"), "overbook"},
			{"csv huge", "text/csv", csvHead + csvRow(9401, "1.5") + csvRow(9402, "1e308"), "overbook"},
			{"yaml int64 overflow", "application/yaml", newRow("id: 9401") + newRow("id: 9402, stock: 9223372036854775808"), "stock"},
			{"yaml huge", "application/yaml", newRow("id: 9401") + newRow("id: 9402, price_cents: 1e300"), "price_cents"},
			{"yaml id overflow", "application/yaml", newRow("id: 9401") + newRow("id: 18446744073709551616"), "id"},
			{"yaml negative admit", "application/yaml", newRow("id: 9401") + newRow("id: 9402, waiting_room: {opens_at: "+opens+", admit_per_second: -1}"), "admit_per_second"},
			{"yaml pass_ttl overflow", "application/yaml", newRow("id: 9401") + newRow("id: 9402, waiting_room: {opens_at: "+opens+", pass_ttl: 9999999999h}"), "pass_ttl"},
		} {
			r := s.seedFile(tc.ct, tc.body)
			assert.Equal(t, http.StatusBadRequest, r.Status, "%s: %s", tc.name, r.Raw)
			assert.Equal(t, "invalid_request", r.Str("error"), r.Raw)
			assert.Contains(t, r.Str("detail"), tc.field, "%s: %s", tc.name, r.Raw)
			assert.Regexp(t, `line [23]\b`, r.Str("detail"), "%s: %s", tc.name, r.Raw)
		}
		assert.Zero(t, s.skuCount(), "a refused file writes nothing")
		// Negative zero is zero: the default overbook.
		r := s.seedFile("application/yaml", newRow("id: 9403, waiting_room: {opens_at: "+opens+", overbook: -0.0}"))
		require.Equal(t, http.StatusOK, r.Status, r.Raw)
		items, _ := r.Body["items"].([]any)
		require.Len(t, items, 1)
		wr := items[0].(map[string]any)["sku"].(map[string]any)["waiting_room"].(map[string]any)
		assert.Equal(t, 1.2, wr["overbook"])
	}
	t.Run("mysql", func(t *testing.T) { check(t, startSale(t, saleOpts{})) })
	t.Run("embedded", func(t *testing.T) { check(t, startSale(t, saleOpts{embedded: true})) })
}

// A seed file is written whole or not at all: a row without an id gets an
// id no row of the file names, so no row overwrites another, and a file
// that a SKU's state in Redis refuses at its second row (units taken there
// that MySQL does not have yet) writes nothing, not even its first row.
func TestASeedFileIsWrittenWholeOrNotAtAll(t *testing.T) {
	check := func(t *testing.T, s *deployment) {
		r := s.do(0, "POST", "/admin/skus", "", skuBody(nil))
		require.Equal(t, http.StatusCreated, r.Status, r.Raw)
		next := r.Num("id") + 1
		r = s.seedFile("application/yaml", newRow("name: First")+newRow(fmt.Sprintf("id: %d, name: Second", next)))
		require.Equal(t, http.StatusOK, r.Status, r.Raw)
		items, _ := r.Body["items"].([]any)
		require.Len(t, items, 2)
		first, second := items[0].(map[string]any), items[1].(map[string]any)
		assert.Equal(t, true, first["created"], r.Raw)
		assert.Equal(t, true, second["created"], r.Raw)
		assert.EqualValues(t, next, second["sku"].(map[string]any)["id"], r.Raw)
		firstID := first["sku"].(map[string]any)["id"]
		assert.NotEqualValues(t, next, firstID, "the row without an id took the id a later row names")
		assert.Equal(t, int64(3), s.skuCount(), "both rows of the file are SKUs")
		assert.Equal(t, "First", s.do(0, "GET", fmt.Sprintf("/api/v1/skus/%v", firstID), "", nil).Str("name"))
		assert.Equal(t, "Second", s.do(0, "GET", fmt.Sprintf("/api/v1/skus/%d", next), "", nil).Str("name"))
	}
	t.Run("mysql", func(t *testing.T) { check(t, startSale(t, saleOpts{})) })
	t.Run("embedded", func(t *testing.T) { check(t, startSale(t, saleOpts{embedded: true})) })

	t.Run("refused by redis", func(t *testing.T) {
		s := startSale(t, saleOpts{noWorkers: true})
		sku := s.seed(10, 5)
		for i := range 3 {
			s.order(0, sku, fmt.Sprintf("u%d", i))
		}
		count := s.skuCount()
		r := s.seedFile("application/yaml", newRow("name: New")+fmt.Sprintf("- {id: %d, stock: 1}\n", sku))
		assert.Equal(t, http.StatusConflict, r.Status, r.Raw)
		assert.Equal(t, "below_sold", r.Str("error"), r.Raw)
		assert.Contains(t, r.Str("detail"), "line 2", r.Raw)
		assert.Equal(t, count, s.skuCount(), "the file's first row is not written")
		got := s.do(0, "GET", fmt.Sprintf("/api/v1/skus/%d", sku), "", nil)
		assert.Equal(t, int64(10), got.Num("stock"))
		assert.Equal(t, int64(7), got.Num("stock_left"), "Redis keeps its stock")
		audit := s.audit(sku)
		assert.True(t, audit.Consistent, "%+v", audit)
	})
}

// A seed file's errors name the line of the file and the field, and an
// unknown field is answered with the fields there are.
func TestSeedFileErrorsNameTheLineAndField(t *testing.T) {
	s := startSale(t, saleOpts{})
	for _, tc := range []struct {
		name, ct, body string
		detail         []string
	}{
		{"unknown field", "application/yaml", newRow("id: 9501") + "- {id: 9502,\n   price: 5}\n",
			[]string{"line 3", `"price"`, "price_cents", "waiting_room"}},
		{"unknown room field", "application/yaml", newRow("id: 9501, waiting_room: {opens_at: 2020-01-01T00:00:00Z, size: 3}"),
			[]string{"line 1", "size", "overbook"}},
		{"a mapping", "application/yaml", "id: 9501\nname: Phone\n", []string{"line 1", "list"}},
		{"out of range", "application/yaml", newRow("id: 9501") + newRow("id: 9502, stock: -1"), []string{"line 2", "stock"}},
		{"missing", "application/yaml", "\n\n" + newRow("id: 9501") + "- {id: 9502, name: Oops}\n",
			[]string{"line 4", "price_cents"}},
		{"csv", "text/csv", "id,name,stock\n9501,A,many\n", []string{"line 2", "stock", "whole number"}},
		{"csv column", "text/csv", "id,name,price\n9501,A,1\n", []string{"line 1", `"price"`, "price_cents", "room_overbook"}},
	} {
		r := s.seedFile(tc.ct, tc.body)
		assert.Equal(t, http.StatusBadRequest, r.Status, "%s: %s", tc.name, r.Raw)
		for _, d := range tc.detail {
			assert.Contains(t, r.Str("detail"), d, "%s: %s", tc.name, r.Raw)
		}
		assert.NotContains(t, r.Str("detail"), "catalog.Spec", "%s: %s", tc.name, r.Raw)
		assert.NotContains(t, r.Str("detail"), "sku 1", "%s: %s", tc.name, r.Raw)
	}
	assert.Zero(t, s.skuCount())
}
