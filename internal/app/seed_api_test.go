package app

import (
	"fmt"
	"net/http"
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
		assert.Contains(t, r.Str("detail"), `sku 2 (id 7003, "Oops") is new and needs price_cents`)
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
	assert.Contains(t, r.Str("detail"), "sku 2 (id 9101)")
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
