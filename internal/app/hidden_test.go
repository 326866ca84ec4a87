package app

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHiddenSKUs: a SKU created with "hidden": true (a load test's) is on
// sale to whoever knows its id, and left out of the shop's list; the admin
// list and the create answer show the flag, and an update without it keeps
// it.
func TestHiddenSKUs(t *testing.T) {
	for _, o := range []saleOpts{{}, {embedded: true}} {
		name := "mysql"
		if o.embedded {
			name = "embedded"
		}
		t.Run(name, func(t *testing.T) {
			s := startSale(t, o)
			now := time.Now().UTC().Truncate(time.Second)
			spec := func(id uint64, extra map[string]any) map[string]any {
				body := map[string]any{"name": "loadtest: flash sale", "price_cents": 1, "stock": 5, "per_user_limit": 1,
					"starts_at": now.Add(-time.Minute), "ends_at": now.Add(time.Hour)}
				if id != 0 {
					body["id"] = id
				}
				for k, v := range extra {
					body[k] = v
				}
				return body
			}
			created := s.do(0, "POST", "/admin/skus", "", spec(0, map[string]any{"hidden": true}))
			require.Equal(t, http.StatusCreated, created.Status, created.Raw)
			assert.Equal(t, true, created.Body["hidden"], created.Raw)
			hidden := uint64(created.Num("id"))
			shown := s.seed(5, 1)
			ours := map[uint64]bool{hidden: true, shown: true}

			time.Sleep(1100 * time.Millisecond) // the list is at most a second old
			listed := s.listAll(0, "/api/v1/skus?state=upcoming,live,sold_out,ended&limit=100", ours)
			require.Len(t, listed, 1, "the shop lists only the SKU that is not hidden")
			assert.Equal(t, shown, listed[0].ID)

			got := s.do(0, "GET", fmt.Sprintf("/api/v1/skus/%d", hidden), "", nil)
			require.Equal(t, http.StatusOK, got.Status, got.Raw)
			assert.Equal(t, "live", got.Str("state"))
			assert.NotContains(t, got.Body, "hidden", "shoppers are not told")
			require.Equal(t, http.StatusAccepted, s.buy(0, hidden, "alice", 1).Status, "a hidden SKU is on sale")

			admin := s.do(0, "GET", "/admin/skus?limit=100", "", nil)
			require.Equal(t, http.StatusOK, admin.Status, admin.Raw)
			assert.Contains(t, admin.Raw, fmt.Sprintf(`"id":%d,"name":"loadtest: flash sale"`, hidden))
			items, _ := admin.Body["items"].([]any)
			flags := map[uint64]any{}
			for _, it := range items {
				m := it.(map[string]any)
				flags[uint64(m["id"].(float64))] = m["hidden"]
			}
			assert.Equal(t, true, flags[hidden])
			assert.Equal(t, false, flags[shown])

			// An update without the flag keeps it; one with it changes it.
			kept := s.do(0, "POST", "/admin/skus", "", spec(hidden, map[string]any{"stock": 6}))
			require.Equal(t, http.StatusOK, kept.Status, kept.Raw)
			assert.Equal(t, true, kept.Body["hidden"], kept.Raw)
			bad := s.do(0, "POST", "/admin/skus", "", spec(hidden, map[string]any{"hidden": "yes"}))
			assert.Equal(t, http.StatusBadRequest, bad.Status, bad.Raw)
			shownNow := s.do(0, "POST", "/admin/skus", "", spec(hidden, map[string]any{"hidden": false}))
			require.Equal(t, http.StatusOK, shownNow.Status, shownNow.Raw)
			assert.Equal(t, false, shownNow.Body["hidden"], shownNow.Raw)
			time.Sleep(1100 * time.Millisecond)
			assert.Len(t, s.listAll(0, "/api/v1/skus?limit=100", ours), 2, "unhidden, it is listed")
		})
	}
}
