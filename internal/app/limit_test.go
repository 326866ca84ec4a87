package app

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLimitCountsCancelledOrders: by default a SKU's per-user limit counts
// the shopper's cancelled orders, so a shopper at the limit who cancels
// cannot buy again while the unit is on sale for others; a SKU created with
// "limit_counts_cancelled": false gives the shopper's count back. Both
// readings survive a rebuild of the SKU's Redis state from SQL, a change of
// the flag recounts the SKU's shoppers under the new reading, and the audit
// stays consistent throughout.
func TestLimitCountsCancelledOrders(t *testing.T) {
	onBackends(t, saleOpts{}, func(t *testing.T, s *deployment) {
		strict := s.limitSKU(3, nil)
		lenient := s.limitSKU(3, false)

		// A shopper at the limit cancels: only the lenient SKU lets them
		// buy again; the strict one sells the unit to someone else.
		s.boughtAndCancelled(strict, "alice")
		left := s.do(2, "GET", fmt.Sprintf("/api/v1/skus/%d", strict), "", nil)
		assert.Equal(t, int64(3), left.Num("stock_left"), "the cancelled unit is on sale again: %s", left.Raw)
		assert.Equal(t, "limit_exceeded", s.buy(1, strict, "alice", 1).Str("error"), "the cancelled unit still counts")
		s.order(2, strict, "bob")
		s.boughtAndCancelled(lenient, "alice")
		s.boughtAndCancelled(lenient, "alice")
		for _, sku := range []uint64{strict, lenient} {
			rep := s.drained(sku)
			assert.Zero(t, rep.OverLimitUsers, "sku %d", sku)
		}

		// Redis loses everything; the rebuild from SQL counts as before.
		wipe(t, s)
		for _, sku := range []uint64{strict, lenient} {
			r := s.do(0, "POST", fmt.Sprintf("/admin/skus/%d/reconcile", sku), "", nil)
			require.Equal(t, http.StatusOK, r.Status, r.Raw)
			assert.Equal(t, true, r.Body["consistent"], r.Raw)
		}
		assert.Equal(t, "limit_exceeded", s.buy(0, strict, "alice", 1).Str("error"), "after the rebuild the cancelled unit still counts")
		s.order(1, strict, "carol")
		s.order(2, lenient, "alice")
		for _, sku := range []uint64{strict, lenient} {
			assert.True(t, s.drained(sku).Consistent, "sku %d", sku)
		}

		// The admin list shows each SKU's reading.
		flags := s.limitFlags()
		assert.Equal(t, true, flags[strict])
		assert.Equal(t, false, flags[lenient])

		// Turning the flag off gives alice her count back at once; turning
		// it on counts dave's cancelled unit.
		off := s.do(0, "PATCH", fmt.Sprintf("/admin/skus/%d", strict), "", map[string]any{"limit_counts_cancelled": false})
		require.Equal(t, http.StatusOK, off.Status, off.Raw)
		assert.Equal(t, false, off.Body["limit_counts_cancelled"], off.Raw)
		s.order(0, strict, "alice")
		later := s.limitSKU(3, false)
		s.boughtAndCancelled(later, "dave")
		on := s.do(1, "PATCH", fmt.Sprintf("/admin/skus/%d", later), "", map[string]any{"limit_counts_cancelled": true})
		require.Equal(t, http.StatusOK, on.Status, on.Raw)
		assert.Equal(t, true, on.Body["limit_counts_cancelled"], on.Raw)
		assert.Equal(t, "limit_exceeded", s.buy(2, later, "dave", 1).Str("error"), "dave's cancelled unit counts now")
		s.order(0, later, "erin")

		// Turned on after alice cancelled twice and bought again, the
		// stricter reading finds her over the limit, and the audit says so;
		// turning it off again clears it.
		on = s.do(0, "PATCH", fmt.Sprintf("/admin/skus/%d", lenient), "", map[string]any{"limit_counts_cancelled": true})
		require.Equal(t, http.StatusOK, on.Status, on.Raw)
		rep := s.audit(lenient)
		assert.Equal(t, int64(1), rep.OverLimitUsers, "%+v", rep)
		assert.False(t, rep.Consistent)
		off = s.do(0, "PATCH", fmt.Sprintf("/admin/skus/%d", lenient), "", map[string]any{"limit_counts_cancelled": false})
		require.Equal(t, http.StatusOK, off.Status, off.Raw)

		// A change without the flag keeps it.
		kept := s.do(0, "PATCH", fmt.Sprintf("/admin/skus/%d", later), "", map[string]any{"stock": 4})
		require.Equal(t, http.StatusOK, kept.Status, kept.Raw)
		assert.Equal(t, true, kept.Body["limit_counts_cancelled"], kept.Raw)
		for _, sku := range []uint64{strict, lenient, later} {
			rep := s.drained(sku)
			assert.Zero(t, rep.OverLimitUsers, "sku %d", sku)
			assert.Equal(t, int64(0), rep.Failed, "sku %d", sku)
		}
	})
}

// limitSKU creates a SKU of stock units on sale now with a limit of 1 per
// shopper, with "limit_counts_cancelled" set to counts unless it is nil,
// and requires the answer to show the flag (true when not given).
func (s *deployment) limitSKU(stock int64, counts any) uint64 {
	s.t.Helper()
	now := time.Now().UTC().Truncate(time.Second)
	body := map[string]any{"name": "Phone", "price_cents": 99900, "stock": stock, "per_user_limit": 1,
		"starts_at": now.Add(-time.Minute), "ends_at": now.Add(time.Hour)}
	want := true
	if counts != nil {
		body["limit_counts_cancelled"] = counts
		want = counts.(bool)
	}
	r := s.do(0, "POST", "/admin/skus", "", body)
	require.Equal(s.t, http.StatusCreated, r.Status, r.Raw)
	require.Equal(s.t, want, r.Body["limit_counts_cancelled"], r.Raw)
	return uint64(r.Num("id"))
}

// boughtAndCancelled buys one unit of sku as user, waits for the order to
// reach SQL and cancels it as user.
func (s *deployment) boughtAndCancelled(sku uint64, user string) {
	s.t.Helper()
	id := s.order(0, sku, user)
	s.waitStatus(user, id, "pending_payment")
	c := s.do(1, "POST", "/api/v1/orders/"+id+"/cancel", user, nil)
	require.Equal(s.t, http.StatusOK, c.Status, c.Raw)
	require.Equal(s.t, "cancelled", c.Str("status"), c.Raw)
}

// limitFlags returns limit_counts_cancelled of each SKU of the admin list's
// first page, by id.
func (s *deployment) limitFlags() map[uint64]any {
	s.t.Helper()
	r := s.do(0, "GET", "/admin/skus?limit=100", "", nil)
	require.Equal(s.t, http.StatusOK, r.Status, r.Raw)
	items, _ := r.Body["items"].([]any)
	flags := map[uint64]any{}
	for _, it := range items {
		m := it.(map[string]any)
		flags[uint64(m["id"].(float64))] = m["limit_counts_cancelled"]
	}
	return flags
}
