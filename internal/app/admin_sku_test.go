package app

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/api/client"
	"github.com/seckill/seckill/internal/testutil"
)

// skuBody is a complete create body of a SKU on sale for the next hour,
// with fields changed or left out (a nil value) as over says.
func skuBody(over map[string]any) map[string]any {
	now := time.Now().UTC().Truncate(time.Second)
	b := map[string]any{"name": "Phone", "price_cents": 99900, "stock": 10, "per_user_limit": 2,
		"starts_at": now.Add(-time.Minute), "ends_at": now.Add(time.Hour)}
	for k, v := range over {
		if v == nil {
			delete(b, k)
		} else {
			b[k] = v
		}
	}
	return b
}

// skuCount is how many SKUs the deployment's database holds.
func (s *deployment) skuCount() int64 {
	s.t.Helper()
	var n int64
	require.NoError(s.t, s.apps[0].DB.Raw("SELECT COUNT(*) FROM skus").Scan(&n).Error)
	return n
}

// paid buys one unit of sku as user and returns the order's price.
func (s *deployment) paid(sku uint64, user string) int64 {
	s.t.Helper()
	id := s.order(0, sku, user)
	r := s.do(0, "GET", "/api/v1/orders/"+id, user, nil)
	require.Equal(s.t, http.StatusOK, r.Status, r.Raw)
	return r.Num("price_cents")
}

// A SKU is created only with every field that has no safe default: one
// left out is 400 invalid_request naming it, and nothing is written. A
// price of 0 is a free sale only when it is said.
func TestCreateSKUNeedsEveryRequiredField(t *testing.T) {
	check := func(t *testing.T, s *deployment) {
		for _, field := range []string{"name", "price_cents", "stock", "per_user_limit", "starts_at", "ends_at"} {
			for _, id := range []any{nil, 4242} {
				r := s.do(0, "POST", "/admin/skus", "", skuBody(map[string]any{field: nil, "id": id}))
				assert.Equal(t, http.StatusBadRequest, r.Status, "%s left out (id %v): %s", field, id, r.Raw)
				assert.Equal(t, "invalid_request", r.Str("error"), r.Raw)
				assert.Contains(t, r.Str("detail"), field, "the answer names the field left out")
			}
		}
		r := s.do(0, "POST", "/admin/skus", "", map[string]any{"id": 4242, "name": "Oops", "stock": 10})
		assert.Equal(t, http.StatusBadRequest, r.Status, r.Raw)
		for _, field := range []string{"price_cents", "per_user_limit", "starts_at", "ends_at"} {
			assert.Contains(t, r.Str("detail"), field, "every field left out is named")
		}
		assert.Zero(t, s.skuCount(), "a refused create writes nothing")

		r = s.do(0, "POST", "/admin/skus", "", skuBody(map[string]any{"price_cents": 0}))
		require.Equal(t, http.StatusCreated, r.Status, r.Raw)
		assert.Zero(t, r.Num("price_cents"), "a free sale when price_cents 0 is said")
		r = s.do(0, "POST", "/admin/skus", "", skuBody(map[string]any{"buckets": nil, "id": nil}))
		require.Equal(t, http.StatusCreated, r.Status, r.Raw)
		assert.Equal(t, int64(1), r.Num("buckets"), "buckets defaults to 1")
	}
	t.Run("mysql", func(t *testing.T) { check(t, startSale(t, saleOpts{})) })
	t.Run("embedded", func(t *testing.T) { check(t, startSale(t, saleOpts{embedded: true})) })
}

// Seeding by id: posting the id of an existing SKU changes only the fields
// given. Renaming a sale that way keeps its price, stock, limit and window,
// and a shopper still pays the price.
func TestSeedingAnExistingIDKeepsWhatIsNotGiven(t *testing.T) {
	s := startSale(t, saleOpts{})
	r := s.do(0, "POST", "/admin/skus", "", skuBody(map[string]any{"id": 77}))
	require.Equal(t, http.StatusCreated, r.Status, r.Raw)
	before := r.Body

	r = s.do(0, "POST", "/admin/skus", "", map[string]any{"id": 77, "name": "Phone X"})
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	assert.Equal(t, "Phone X", r.Str("name"))
	for _, k := range []string{"price_cents", "stock", "stock_left", "per_user_limit", "starts_at", "ends_at", "buckets"} {
		assert.Equal(t, before[k], r.Body[k], "%s kept", k)
	}
	// As the report had it: the window and the limit given, the numbers not.
	r = s.do(0, "POST", "/admin/skus", "", skuBody(map[string]any{"id": 77, "name": "Phone Y", "price_cents": nil, "stock": nil}))
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	assert.Equal(t, int64(99900), r.Num("price_cents"), "an absent price is kept, not 0")
	assert.Equal(t, int64(10), r.Num("stock"), "an absent stock is kept, not 0")
	assert.Equal(t, int64(99900), s.paid(77, "alice"), "the shopper pays the price")

	r = s.do(0, "POST", "/admin/skus", "", map[string]any{"id": 77, "name": nil})
	assert.Equal(t, http.StatusBadRequest, r.Status, "null is no value: %s", r.Raw)
	assert.Contains(t, r.Str("detail"), "name")
	assert.Equal(t, "Phone Y", s.do(0, "GET", "/api/v1/skus/77", "", nil).Str("name"))
}

// An admin renames a sale through the generated client, as a JSON merge
// patch naming only the name: the price and the stock stay, and a shopper
// then pays the price. A create through the client must say its price, and
// a free sale says 0.
func TestRenameASaleWithPatch(t *testing.T) {
	s := startSale(t, saleOpts{})
	ctx := context.Background()
	sku := s.seed(10, 1)
	before := s.do(0, "GET", fmt.Sprintf("/api/v1/skus/%d", sku), "", nil)

	r, err := s.api[0].PatchSKUWithApplicationMergePatchPlusJSONBodyWithResponse(ctx, int64(sku),
		client.SKUPatch{Name: ptr("Phone X (2026 edition)")}, asAdmin)
	require.NoError(t, err)
	require.NotNil(t, r.JSON200, "%d %s", r.StatusCode(), r.Body)
	assert.Equal(t, "Phone X (2026 edition)", r.JSON200.Name)
	assert.Equal(t, int64(99900), r.JSON200.PriceCents, "the price is kept")
	assert.Equal(t, int64(10), r.JSON200.Stock, "the stock is kept")
	assert.Equal(t, 1, r.JSON200.PerUserLimit)
	starts, err := time.Parse(time.RFC3339, before.Str("starts_at"))
	require.NoError(t, err)
	assert.True(t, starts.Equal(r.JSON200.StartsAt), "the window is kept")

	id := s.order(0, sku, "alice")
	o, err := s.api[0].GetOrderWithResponse(ctx, id, s.as("alice"))
	require.NoError(t, err)
	require.NotNil(t, o.JSON200, "%d %s", o.StatusCode(), o.Body)
	assert.Equal(t, int64(99900), o.JSON200.PriceCents, "the shopper pays the price after the rename")
	got, err := s.api[0].GetSKUWithResponse(ctx, int64(sku))
	require.NoError(t, err)
	require.NotNil(t, got.JSON200)
	assert.Equal(t, "Phone X (2026 edition)", got.JSON200.Name)
	assert.Equal(t, int64(99900), got.JSON200.PriceCents)

	now := time.Now().UTC()
	spec := client.SKUSpec{Name: ptr("Gift"), Stock: ptr(int64(5)), PerUserLimit: ptr(1), StartsAt: ptr(now.Add(-time.Minute)), EndsAt: ptr(now.Add(time.Hour))}
	c, err := s.api[0].UpsertSKUWithResponse(ctx, spec, asAdmin)
	require.NoError(t, err)
	require.NotNil(t, c.JSON400, "no price, no sale: %d %s", c.StatusCode(), c.Body)
	assert.Contains(t, c.JSON400.Detail, "price_cents")
	spec.PriceCents = ptr(int64(0))
	c, err = s.api[0].UpsertSKUWithResponse(ctx, spec, asAdmin)
	require.NoError(t, err)
	require.NotNil(t, c.JSON201, "%d %s", c.StatusCode(), c.Body)
	assert.Zero(t, c.JSON201.PriceCents, "a free sale, said")
}

// PATCH /admin/skus/{id} is a JSON merge patch: only the fields it names
// change, through the same path as every other change of a SKU.
func TestPatchSKU(t *testing.T) {
	check := func(t *testing.T, s *deployment) {
		r := s.do(0, "POST", "/admin/skus", "", skuBody(nil))
		require.Equal(t, http.StatusCreated, r.Status, r.Raw)
		sku := uint64(r.Num("id"))
		before := r.Body
		path := fmt.Sprintf("/admin/skus/%d", sku)
		patch := func(contentType string, body any) map[string]any {
			t.Helper()
			c := s.caller()
			req, err := c.Request(s.urls[0], "PATCH", path, "", body)
			require.NoError(t, err)
			req.Header.Set("Content-Type", contentType)
			r, err := c.Send(req)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, r.Status, r.Raw)
			return r.Body
		}

		got := patch("application/merge-patch+json", `{"name":"Phone X"}`)
		assert.Equal(t, "Phone X", got["name"])
		for _, k := range []string{"price_cents", "stock", "stock_left", "per_user_limit", "starts_at", "ends_at", "buckets"} {
			assert.Equal(t, before[k], got[k], "%s kept by a rename", k)
		}
		assert.Equal(t, int64(99900), s.paid(sku, "alice"), "the shopper pays the price after a rename")

		got = patch("application/json", map[string]any{"price_cents": 0, "per_user_limit": 3})
		assert.Equal(t, float64(0), got["price_cents"], "0 when said")
		assert.Equal(t, float64(3), got["per_user_limit"])
		got = patch("application/merge-patch+json; charset=utf-8", map[string]any{"stock": 20, "buckets": 1, "id": sku})
		assert.Equal(t, float64(20), got["stock"], "a top-up")
		assert.Equal(t, float64(19), got["stock_left"])
		got = patch("application/merge-patch+json", map[string]any{"stock": 5})
		assert.Equal(t, float64(4), got["stock_left"], "a cut")
		ends := time.Now().UTC().Add(2 * time.Hour).Truncate(time.Second)
		got = patch("application/merge-patch+json", map[string]any{"ends_at": ends})
		assert.Equal(t, ends.Format(time.RFC3339), got["ends_at"])
		assert.Equal(t, "Phone X", got["name"])
		got = patch("application/merge-patch+json", `{}`)
		assert.Equal(t, float64(5), got["stock"], "an empty patch changes nothing")
		audit := s.drained(sku)
		kept := s.do(0, "GET", fmt.Sprintf("/api/v1/skus/%d", sku), "", nil)

		for _, tc := range []struct {
			name, path, contentType, body string
			status                        int
			code, detail                  string
		}{
			{"null", path, "", `{"name":null}`, 400, "invalid_request", "name"},
			{"null stock", path, "", `{"stock":null}`, 400, "invalid_request", "stock"},
			{"another id", path, "", fmt.Sprintf(`{"id":%d,"name":"x"}`, sku+1), 400, "invalid_request", "id"},
			{"empty name", path, "", `{"name":"  "}`, 400, "invalid_request", "name"},
			{"negative price", path, "", `{"price_cents":-1}`, 400, "invalid_request", "price_cents"},
			{"zero limit", path, "", `{"per_user_limit":0}`, 400, "invalid_request", "per_user_limit"},
			{"window backwards", path, "", `{"starts_at":"2090-01-01T00:00:00Z"}`, 400, "invalid_request", "ends_at"},
			{"unknown field", path, "", `{"name":"x","price":1}`, 400, "invalid_request", "price"},
			{"not an object", path, "", `["name"]`, 400, "invalid_request", ""},
			{"string stock", path, "", `{"stock":"9"}`, 400, "invalid_request", "stock"},
			{"stock and stock_total differ", path, "", `{"stock":6,"stock_total":7}`, 400, "invalid_request", "stock_total"},
			{"below sold", path, "", `{"name":"Cut","stock":0}`, 409, "below_sold", ""},
			{"other buckets", path, "", `{"name":"More","buckets":4}`, 409, "buckets_fixed", "has 1, asked for 4"},
			{"unknown sku", "/admin/skus/424242", "", `{"name":"x"}`, 404, "unknown_sku", ""},
			{"bad id", "/admin/skus/x", "", `{"name":"x"}`, 400, "invalid_request", ""},
			{"json patch", path, "application/json-patch+json", `[{"op":"replace","path":"/name","value":"x"}]`, 415, "unsupported_media_type", "merge-patch"},
			{"form", path, "application/x-www-form-urlencoded", `name=x`, 415, "unsupported_media_type", ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				c := s.caller()
				req, err := c.Request(s.urls[0], "PATCH", tc.path, "", tc.body)
				require.NoError(t, err)
				if tc.contentType != "" {
					req.Header.Set("Content-Type", tc.contentType)
				}
				r, err := c.Send(req)
				require.NoError(t, err)
				assert.Equal(t, tc.status, r.Status, r.Raw)
				assert.Equal(t, tc.code, r.Str("error"), r.Raw)
				assert.Contains(t, r.Str("detail"), tc.detail, r.Raw)
			})
		}
		now := s.do(0, "GET", fmt.Sprintf("/api/v1/skus/%d", sku), "", nil)
		assert.Equal(t, kept.Body, now.Body, "the refused patches changed nothing")
		after := s.audit(sku)
		assert.Equal(t, audit.Sold, after.Sold)
		assert.Equal(t, *audit.RedisLeft, *after.RedisLeft, "Redis keeps its stock")
		assert.True(t, after.Consistent, "%+v", after)
	}
	t.Run("mysql", func(t *testing.T) { check(t, startSale(t, saleOpts{})) })
	t.Run("embedded", func(t *testing.T) { check(t, startSale(t, saleOpts{embedded: true})) })
}

// A SKU's units on sale are called stock in every request and answer; the
// old name stock_total is still taken and still sent for one release.
func TestStockIsOneName(t *testing.T) {
	s := startSale(t, saleOpts{})
	r := s.do(0, "POST", "/admin/skus", "", skuBody(nil))
	require.Equal(t, http.StatusCreated, r.Status, r.Raw)
	sku := uint64(r.Num("id"))
	assert.Equal(t, int64(10), r.Num("stock"), "the create answer")
	assert.Equal(t, int64(10), r.Num("stock_total"), "the old name, for one release")
	stockPath := fmt.Sprintf("/admin/skus/%d/stock", sku)

	r = s.do(0, "PUT", stockPath, "", map[string]any{"stock": 12})
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	assert.Equal(t, int64(12), r.Num("stock"))
	assert.Equal(t, int64(12), r.Num("stock_total"))
	r = s.do(0, "PUT", stockPath, "", map[string]any{"stock_total": 13})
	require.Equal(t, http.StatusOK, r.Status, "the old name is still taken: %s", r.Raw)
	assert.Equal(t, int64(13), r.Num("stock"))
	r = s.do(0, "PUT", stockPath, "", map[string]any{"stock": 14, "stock_total": 14})
	require.Equal(t, http.StatusOK, r.Status, "both names with one value: %s", r.Raw)
	for _, body := range []string{`{"stock":15,"stock_total":16}`, `{}`, `{"stock":null}`} {
		r = s.do(0, "PUT", stockPath, "", body)
		assert.Equal(t, http.StatusBadRequest, r.Status, "%s: %s", body, r.Raw)
		assert.Contains(t, r.Str("detail"), "stock", r.Raw)
	}
	r = s.do(0, "POST", "/admin/skus", "", skuBody(map[string]any{"stock": nil, "stock_total": 3}))
	require.Equal(t, http.StatusCreated, r.Status, "a create with the old name: %s", r.Raw)
	assert.Equal(t, int64(3), r.Num("stock"))
	r = s.do(0, "POST", "/admin/skus", "", skuBody(map[string]any{"stock": 3, "stock_total": 4}))
	assert.Equal(t, http.StatusBadRequest, r.Status, r.Raw)
	assert.Equal(t, int64(2), s.skuCount(), "the create with two stocks wrote nothing")

	r = s.do(0, "GET", fmt.Sprintf("/api/v1/skus/%d", sku), "", nil)
	assert.Equal(t, int64(14), r.Num("stock"), "the shopper's view")
	r = s.do(0, "GET", fmt.Sprintf("/admin/skus/%d/audit", sku), "", nil)
	assert.Equal(t, int64(14), r.Num("stock"), "the audit")
	assert.Equal(t, int64(14), r.Num("stock_total"), "the audit, old name")
	r = s.do(0, "GET", "/admin/skus?limit=1", "", nil)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	items, _ := r.Body["items"].([]any)
	require.Len(t, items, 1)
	assert.Equal(t, float64(14), items[0].(map[string]any)["stock"], "the admin list")
}

// A sale window is judged as it is stored, to the millisecond: a window
// shorter than a millisecond is refused however it is set, and answers show
// the times as stored, not as sent.
func TestSaleWindowIsJudgedToTheMillisecond(t *testing.T) {
	check := func(t *testing.T, s *deployment) {
		base := time.Now().UTC().Truncate(time.Second).Add(time.Hour)
		short := map[string]any{"starts_at": base.Add(100 * time.Microsecond), "ends_at": base.Add(400 * time.Microsecond)}
		r := s.do(0, "POST", "/admin/skus", "", skuBody(short))
		assert.Equal(t, http.StatusBadRequest, r.Status, r.Raw)
		assert.Contains(t, r.Str("detail"), "ends_at", r.Raw)
		r = s.do(0, "POST", "/admin/skus", "", skuBody(map[string]any{"id": 9601, "starts_at": short["starts_at"], "ends_at": short["ends_at"]}))
		assert.Equal(t, http.StatusBadRequest, r.Status, r.Raw)
		r = s.seedFile("application/yaml", fmt.Sprintf("- {id: 9602, name: A, price_cents: 1, stock: 1, per_user_limit: 1, starts_at: %s, ends_at: %s}\n",
			base.Add(100*time.Microsecond).Format(time.RFC3339Nano), base.Add(400*time.Microsecond).Format(time.RFC3339Nano)))
		assert.Equal(t, http.StatusBadRequest, r.Status, r.Raw)
		assert.Contains(t, r.Str("detail"), "ends_at", r.Raw)
		assert.Zero(t, s.skuCount(), "no window of no length is stored")

		r = s.do(0, "POST", "/admin/skus", "", skuBody(map[string]any{"starts_at": base.Add(1234567 * time.Nanosecond),
			"ends_at": base.Add(time.Hour + 999999*time.Microsecond)}))
		require.Equal(t, http.StatusCreated, r.Status, r.Raw)
		sku := r.Num("id")
		starts, ends := base.Add(time.Millisecond), base.Add(time.Hour+999*time.Millisecond)
		assert.Equal(t, starts.Format(time.RFC3339Nano), r.Str("starts_at"), "the answer shows the start as stored")
		assert.Equal(t, ends.Format(time.RFC3339Nano), r.Str("ends_at"))
		got := s.do(0, "GET", fmt.Sprintf("/api/v1/skus/%d", sku), "", nil)
		assert.Equal(t, starts.Format(time.RFC3339Nano), got.Str("starts_at"))
		assert.Equal(t, ends.Format(time.RFC3339Nano), got.Str("ends_at"))

		path := fmt.Sprintf("/admin/skus/%d", sku)
		r = s.do(0, "PATCH", path, "", map[string]any{"ends_at": starts.Add(300 * time.Microsecond)})
		assert.Equal(t, http.StatusBadRequest, r.Status, "an end within the start's millisecond: %s", r.Raw)
		r = s.do(0, "PATCH", path, "", short)
		assert.Equal(t, http.StatusBadRequest, r.Status, r.Raw)
		r = s.do(0, "POST", "/admin/skus", "", map[string]any{"id": sku, "ends_at": starts.Add(300 * time.Microsecond)})
		assert.Equal(t, http.StatusBadRequest, r.Status, "the seeding form: %s", r.Raw)
		r = s.do(0, "PATCH", path, "", map[string]any{"ends_at": starts.Add(1500 * time.Microsecond)})
		require.Equal(t, http.StatusOK, r.Status, r.Raw)
		assert.Equal(t, starts.Add(time.Millisecond).Format(time.RFC3339Nano), r.Str("ends_at"), "the answer shows the end as stored")
	}
	t.Run("mysql", func(t *testing.T) { check(t, startSale(t, saleOpts{})) })
	t.Run("embedded", func(t *testing.T) { check(t, startSale(t, saleOpts{embedded: true})) })
}

// Two creates at once, one without an id and one with the id the first
// would get: neither is a 500, each answer says whether its request
// created the SKU, and the outcome is what the two would have made one
// after the other, in MySQL and in Redis.
func TestConcurrentCreatesOfTheNextID(t *testing.T) {
	s := startSale(t, saleOpts{})
	maxID := func() int64 {
		var n int64
		require.NoError(t, s.apps[0].DB.Raw("SELECT COALESCE(MAX(id), 0) FROM skus").Scan(&n).Error)
		return n
	}
	var ids []int64
	for round := range 40 {
		next := maxID() + 1
		var a, b testutil.Reply
		var wg sync.WaitGroup
		wg.Go(func() { a = s.do(0, "POST", "/admin/skus", "", skuBody(map[string]any{"name": "A", "stock": 10})) })
		wg.Go(func() {
			b = s.do(0, "POST", "/admin/skus", "", skuBody(map[string]any{"id": next, "name": "B", "stock": 7}))
		})
		wg.Wait()
		require.Equal(t, http.StatusCreated, a.Status, "round %d, without an id: %s", round, a.Raw)
		require.Contains(t, []int{http.StatusCreated, http.StatusOK}, b.Status, "round %d, id %d: %s", round, next, b.Raw)
		assert.Equal(t, next, b.Num("id"))
		assert.Equal(t, "B", b.Str("name"))
		if a.Num("id") == next {
			// A first: B updated the SKU A created.
			assert.Equal(t, http.StatusOK, b.Status, "round %d: B changed A's SKU, it did not create it", round)
		} else {
			assert.Equal(t, http.StatusCreated, b.Status, "round %d: B created %d: %s", round, next, b.Raw)
			got := s.do(0, "GET", fmt.Sprintf("/api/v1/skus/%d", a.Num("id")), "", nil)
			assert.Equal(t, "A", got.Str("name"), "round %d", round)
			assert.Equal(t, int64(10), got.Num("stock_left"), "round %d", round)
			ids = append(ids, a.Num("id"))
		}
		got := s.do(0, "GET", fmt.Sprintf("/api/v1/skus/%d", next), "", nil)
		assert.Equal(t, "B", got.Str("name"), "round %d", round)
		assert.Equal(t, int64(7), got.Num("stock"), "round %d", round)
		assert.Equal(t, int64(7), got.Num("stock_left"), "round %d: Redis has what MySQL has", round)
		ids = append(ids, next)
	}
	for _, id := range ids {
		rep := s.audit(uint64(id))
		assert.True(t, rep.Consistent, "sku %d: %+v", id, rep)
	}
}

// A waiting room's seed is public from the sale's start: a window change
// that would open the room for another draw (a start moved past now) is
// refused, since that draw would be known in advance; a change that keeps
// the start in the past, or a start moved while the seed is still secret,
// is not.
func TestAWindowChangeDoesNotReopenADrawnRoom(t *testing.T) {
	s := startSale(t, saleOpts{env: map[string]string{"SECKILL_ROOM_PASS_KEYS": roomKey}})
	now := time.Now().UTC().Truncate(time.Second)
	create := func(id int, mode string, opens, starts, ends time.Duration) string {
		t.Helper()
		r := s.do(0, "POST", "/admin/skus", "", skuBody(map[string]any{"id": id, "starts_at": now.Add(starts), "ends_at": now.Add(ends),
			"waiting_room": map[string]any{"opens_at": now.Add(opens), "mode": mode}}))
		require.Equal(t, http.StatusCreated, r.Status, r.Raw)
		return fmt.Sprintf("/admin/skus/%d", id)
	}
	refused := func(r testutil.Reply) {
		t.Helper()
		assert.Equal(t, http.StatusBadRequest, r.Status, r.Raw)
		assert.Equal(t, "invalid_request", r.Str("error"), r.Raw)
		assert.Contains(t, r.Str("detail"), "seed", r.Raw)
		assert.Contains(t, r.Str("detail"), "new sku", r.Raw)
	}
	future := map[string]any{"starts_at": now.Add(time.Hour), "ends_at": now.Add(2 * time.Hour)}

	ended := create(9701, "random", -3*time.Hour, -2*time.Hour, -time.Hour)
	v := s.do(0, "GET", "/api/v1/skus/9701", "", nil)
	require.NotEmpty(t, v.Body["waiting_room"].(map[string]any)["seed"], "the seed is public: %s", v.Raw)
	refused(s.do(0, "PATCH", ended, "", future))
	refused(s.do(0, "POST", "/admin/skus", "", map[string]any{"id": 9701, "starts_at": future["starts_at"], "ends_at": future["ends_at"]}))
	refused(s.seedFile("application/yaml", fmt.Sprintf("- {id: 9701, starts_at: %s, ends_at: %s}\n",
		now.Add(time.Hour).Format(time.RFC3339), now.Add(2*time.Hour).Format(time.RFC3339))))
	r := s.do(0, "PATCH", ended, "", map[string]any{"ends_at": now.Add(time.Hour)})
	assert.Equal(t, http.StatusOK, r.Status, "the sale goes on, its draw as it was: %s", r.Raw)

	live := create(9702, "random", -2*time.Hour, -time.Hour, time.Hour)
	refused(s.do(0, "PATCH", live, "", map[string]any{"starts_at": now.Add(10 * time.Minute)}))

	upcoming := create(9703, "random", -time.Minute, time.Hour, 2*time.Hour)
	r = s.do(0, "PATCH", upcoming, "", map[string]any{"starts_at": now.Add(90 * time.Minute)})
	assert.Equal(t, http.StatusOK, r.Status, "the seed is still secret: %s", r.Raw)

	fifo := create(9704, "fifo", -3*time.Hour, -2*time.Hour, -time.Hour)
	r = s.do(0, "PATCH", fifo, "", future)
	assert.Equal(t, http.StatusOK, r.Status, "a fifo room has no draw: %s", r.Raw)
}
