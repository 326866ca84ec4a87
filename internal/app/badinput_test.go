package app

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Bad input gets a 4xx with the error body, never a 5xx, and writes nothing.
func TestBadInputIsRefusedAndWritesNothing(t *testing.T) {
	check := func(t *testing.T, s *deployment) {
		sku := s.seed(10, 2)
		before := s.audit(sku)

		big := `{"sku_id":1,"qty":1,"request_id":"` + strings.Repeat("x", 17<<10) + `"}`
		for _, tc := range []struct {
			name, method, path, user string
			body                     any
			status                   int
			code                     string
		}{
			{"malformed json", "POST", "/api/v1/orders", "u", `{"sku_id":`, 400, "invalid_request"},
			{"not an object", "POST", "/api/v1/orders", "u", `[1,2]`, 400, "invalid_request"},
			{"empty body", "POST", "/api/v1/orders", "u", ``, 400, "invalid_request"},
			{"two objects", "POST", "/api/v1/orders", "u", fmt.Sprintf(`{"sku_id":%d,"qty":1}{}`, sku), 400, "invalid_request"},
			{"unknown field", "POST", "/api/v1/orders", "u", fmt.Sprintf(`{"sku_id":%d,"qty":1,"price":0}`, sku), 400, "invalid_request"},
			{"qty zero", "POST", "/api/v1/orders", "u", fmt.Sprintf(`{"sku_id":%d,"qty":0}`, sku), 400, "invalid_request"},
			{"qty missing", "POST", "/api/v1/orders", "u", fmt.Sprintf(`{"sku_id":%d}`, sku), 400, "invalid_request"},
			{"qty negative", "POST", "/api/v1/orders", "u", fmt.Sprintf(`{"sku_id":%d,"qty":-1}`, sku), 400, "invalid_request"},
			{"qty huge", "POST", "/api/v1/orders", "u", fmt.Sprintf(`{"sku_id":%d,"qty":99999999999999999999}`, sku), 400, "invalid_request"},
			{"qty above limit", "POST", "/api/v1/orders", "u", fmt.Sprintf(`{"sku_id":%d,"qty":3}`, sku), 409, "limit_exceeded"},
			{"qty fraction", "POST", "/api/v1/orders", "u", fmt.Sprintf(`{"sku_id":%d,"qty":1.5}`, sku), 400, "invalid_request"},
			{"sku as string", "POST", "/api/v1/orders", "u", `{"sku_id":"1","qty":1}`, 400, "invalid_request"},
			{"sku negative", "POST", "/api/v1/orders", "u", `{"sku_id":-1,"qty":1}`, 400, "invalid_request"},
			{"sku zero", "POST", "/api/v1/orders", "u", `{"sku_id":0,"qty":1}`, 400, "invalid_request"},
			{"sku unknown", "POST", "/api/v1/orders", "u", `{"sku_id":987654,"qty":1}`, 404, "unknown_sku"},
			{"sku largest unknown", "POST", "/api/v1/orders", "u", `{"sku_id":9223372036854775807,"qty":1}`, 404, "unknown_sku"},
			{"sku above int64", "POST", "/api/v1/orders", "u", `{"sku_id":9223372036854775808,"qty":1}`, 400, "invalid_request"},
			{"sku max uint64", "POST", "/api/v1/orders", "u", `{"sku_id":18446744073709551615,"qty":1}`, 400, "invalid_request"},
			{"sql in request id", "POST", "/api/v1/orders", "u", fmt.Sprintf(`{"sku_id":%d,"qty":1,"request_id":"1'; DROP TABLE orders;--"}`, sku), 400, "invalid_request"},
			{"body over 16 KiB", "POST", "/api/v1/orders", "u", big, 413, "invalid_request"},
			{"no user", "POST", "/api/v1/orders", "", fmt.Sprintf(`{"sku_id":%d,"qty":1}`, sku), 401, "unauthorized"},
			{"sql in user", "POST", "/api/v1/orders", "x' OR '1'='1", fmt.Sprintf(`{"sku_id":%d,"qty":1}`, sku), 401, "unauthorized"},
			{"sku id not a number", "GET", "/api/v1/skus/abc", "", nil, 400, "invalid_request"},
			{"sku id huge", "GET", "/api/v1/skus/99999999999999999999999", "", nil, 400, "invalid_request"},
			{"sku id unknown", "GET", "/api/v1/skus/424242", "", nil, 404, "unknown_sku"},
			{"sku id largest unknown", "GET", "/api/v1/skus/9223372036854775807", "", nil, 404, "unknown_sku"},
			{"sku id above int64", "GET", "/api/v1/skus/9223372036854775808", "", nil, 400, "invalid_request"},
			{"sku id max uint64", "GET", "/api/v1/skus/18446744073709551615", "", nil, 400, "invalid_request"},
			{"order id junk", "GET", "/api/v1/orders/' OR 1=1", "u", nil, 404, "not_found"},
			{"pay junk order", "POST", "/api/v1/orders/1-zzzzzzzzzzzzzzzzzzzzzzzz/pay", "u", nil, 404, "not_found"},
			{"cancel no user", "POST", "/api/v1/orders/1-zzzzzzzzzzzzzzzzzzzzzzzz/cancel", "", nil, 401, "unauthorized"},
			{"unknown route", "GET", "/api/v1/nope", "", nil, 404, "not_found"},
			{"wrong method", "DELETE", "/api/v1/orders", "u", nil, 405, "method_not_allowed"},
			{"admin stock below sold is fine but negative is not", "PUT", fmt.Sprintf("/admin/skus/%d/stock", sku), "", `{"stock_total":-5}`, 400, "invalid_request"},
			{"admin stock missing", "PUT", fmt.Sprintf("/admin/skus/%d/stock", sku), "", `{}`, 400, "invalid_request"},
			{"admin stock string", "PUT", fmt.Sprintf("/admin/skus/%d/stock", sku), "", `{"stock_total":"9"}`, 400, "invalid_request"},
			{"admin sku without name", "POST", "/admin/skus", "", `{"price_cents":1,"stock":1,"per_user_limit":1,"starts_at":"2026-01-01T00:00:00Z","ends_at":"2026-01-02T00:00:00Z"}`, 400, "invalid_request"},
			{"admin sku window backwards", "POST", "/admin/skus", "", `{"name":"x","price_cents":1,"stock":1,"per_user_limit":1,"starts_at":"2026-01-02T00:00:00Z","ends_at":"2026-01-01T00:00:00Z"}`, 400, "invalid_request"},
			{"admin sku bad time", "POST", "/admin/skus", "", `{"name":"x","price_cents":1,"stock":1,"per_user_limit":1,"starts_at":"tomorrow","ends_at":"2026-01-01T00:00:00Z"}`, 400, "invalid_request"},
			{"admin sku stock negative", "POST", "/admin/skus", "", `{"name":"x","price_cents":1,"stock":-1,"per_user_limit":1,"starts_at":"2026-01-01T00:00:00Z","ends_at":"2026-01-02T00:00:00Z"}`, 400, "invalid_request"},
			{"admin audit unknown", "GET", "/admin/skus/31337/audit", "", nil, 404, "unknown_sku"},
			{"admin audit bad id", "GET", "/admin/skus/x/audit", "", nil, 400, "invalid_request"},
			{"admin audit id above int64", "GET", "/admin/skus/9223372036854775808/audit", "", nil, 400, "invalid_request"},
			{"admin reconcile id above int64", "POST", "/admin/skus/9223372036854775808/reconcile", "", nil, 400, "invalid_request"},
			{"admin queue id above int64", "GET", "/admin/skus/9223372036854775808/queue", "", nil, 400, "invalid_request"},
			{"admin dead id above int64", "GET", "/admin/skus/9223372036854775808/dead", "", nil, 400, "invalid_request"},
			{"admin stock id above int64", "PUT", "/admin/skus/9223372036854775808/stock", "", `{"stock_total":5}`, 400, "invalid_request"},
			{"admin stock largest id unknown", "PUT", "/admin/skus/9223372036854775807/stock", "", `{"stock_total":5}`, 404, "unknown_sku"},
			{"admin sku id above int64", "POST", "/admin/skus", "", `{"id":9223372036854775808,"name":"x","price_cents":1,"stock":1,"per_user_limit":1,"starts_at":"2026-01-01T00:00:00Z","ends_at":"2026-01-02T00:00:00Z"}`, 400, "invalid_request"},
			{"admin sku id max uint64", "POST", "/admin/skus", "", `{"id":18446744073709551615,"name":"x","price_cents":1,"stock":1,"per_user_limit":1,"starts_at":"2026-01-01T00:00:00Z","ends_at":"2026-01-02T00:00:00Z"}`, 400, "invalid_request"},
			{"admin sku buckets negative", "POST", "/admin/skus", "", `{"name":"x","price_cents":1,"stock":1,"per_user_limit":1,"buckets":-1,"starts_at":"2026-01-01T00:00:00Z","ends_at":"2026-01-02T00:00:00Z"}`, 400, "invalid_request"},
			{"admin sku buckets 65", "POST", "/admin/skus", "", `{"name":"x","price_cents":1,"stock":1,"per_user_limit":1,"buckets":65,"starts_at":"2026-01-01T00:00:00Z","ends_at":"2026-01-02T00:00:00Z"}`, 400, "invalid_request"},
			{"admin sku buckets string", "POST", "/admin/skus", "", `{"name":"x","price_cents":1,"stock":1,"per_user_limit":1,"buckets":"4","starts_at":"2026-01-01T00:00:00Z","ends_at":"2026-01-02T00:00:00Z"}`, 400, "invalid_request"},
			{"admin sku buckets fraction", "POST", "/admin/skus", "", `{"name":"x","price_cents":1,"stock":1,"per_user_limit":1,"buckets":1.5,"starts_at":"2026-01-01T00:00:00Z","ends_at":"2026-01-02T00:00:00Z"}`, 400, "invalid_request"},
			{"admin sku buckets of an existing sku", "POST", "/admin/skus", "", fmt.Sprintf(`{"id":%d,"name":"x","price_cents":1,"stock":10,"per_user_limit":2,"buckets":65,"starts_at":"2026-01-01T00:00:00Z","ends_at":"2026-01-02T00:00:00Z"}`, sku), 400, "invalid_request"},
			{"admin sku buckets changed with a cut", "POST", "/admin/skus", "", fmt.Sprintf(`{"id":%d,"name":"x","price_cents":1,"stock":5,"per_user_limit":2,"buckets":2,"starts_at":"2026-01-01T00:00:00Z","ends_at":"2026-01-02T00:00:00Z"}`, sku), 409, "buckets_fixed"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := s.do(0, tc.method, tc.path, tc.user, tc.body)
				assert.Equal(t, tc.status, r.Status, r.Raw)
				assert.Equal(t, tc.code, r.Str("error"), r.Raw)
				assert.NotEmpty(t, r.Str("detail"), r.Raw)
			})
		}
		after := s.audit(sku)
		assert.Equal(t, before.Orders, after.Orders)
		assert.Equal(t, *before.RedisLeft, *after.RedisLeft, "no stock taken")
		assert.Zero(t, after.QueuedOrders)
		var skus int64
		s.apps[0].DB.Raw("SELECT COUNT(*) FROM skus").Scan(&skus)
		assert.Equal(t, int64(1), skus, "no SKU written by the refused admin requests")
	}
	onBackends(t, saleOpts{}, check)
	t.Run("embedded", func(t *testing.T) { check(t, startSale(t, saleOpts{embedded: true})) })
}

func TestAdminAuth(t *testing.T) {
	s := startSale(t, saleOpts{})
	req, _ := http.NewRequest("GET", s.urls[0]+"/admin/skus/1/audit", nil)
	for _, h := range []string{"", "Bearer wrong", "Basic " + adminToken, "Bearer " + adminToken + "x"} {
		if h != "" {
			req.Header.Set("Authorization", h)
		}
		resp, err := s.client.Do(req)
		if assert.NoError(t, err) {
			resp.Body.Close()
			assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, h)
		}
	}
}

func TestAdminDisabledWithoutToken(t *testing.T) {
	s := startSale(t, saleOpts{env: map[string]string{"SECKILL_ADMIN_TOKEN": ""}})
	r := s.do(0, "GET", "/admin/skus/1/audit", "", nil)
	assert.Equal(t, http.StatusForbidden, r.Status)
	assert.Equal(t, "admin_disabled", r.Str("error"))
}

// A SKU's bucket count is set when it is created and never changes: an
// update without it keeps it, one asking for another is 409 buckets_fixed
// and writes nothing, in SQL or in Redis, even with a stock cut in it. Admin
// views show the count; the shopper's view does not.
func TestAdminSKUBucketsAreFixed(t *testing.T) {
	check := func(t *testing.T, s *deployment) {
		now := time.Now().UTC().Truncate(time.Second)
		spec := map[string]any{"name": "Phone", "price_cents": 100, "stock": 10, "per_user_limit": 2, "buckets": 4,
			"starts_at": now.Add(-time.Minute), "ends_at": now.Add(time.Hour)}
		r := s.do(0, "POST", "/admin/skus", "", spec)
		require.Equal(t, http.StatusCreated, r.Status, r.Raw)
		assert.Equal(t, int64(4), r.Num("buckets"), r.Raw)
		sku := uint64(r.Num("id"))
		plain := s.seed(5, 1)
		require.Equal(t, http.StatusAccepted, s.buy(0, sku, "alice", 1).Status)

		shopper := s.do(0, "GET", fmt.Sprintf("/api/v1/skus/%d", sku), "", nil)
		require.Equal(t, http.StatusOK, shopper.Status, shopper.Raw)
		assert.NotContains(t, shopper.Body, "buckets", "shoppers do not see buckets")
		counts := map[uint64]int64{}
		for _, it := range s.listAll(0, "/admin/skus?limit=100", map[uint64]bool{sku: true, plain: true}) {
			counts[it.ID] = it.Buckets
		}
		assert.Equal(t, map[uint64]int64{sku: 4, plain: 1}, counts, "the admin list shows each SKU's buckets; not given, 1")

		spec["id"] = sku
		for _, keep := range []any{4, nil} {
			if keep == nil {
				delete(spec, "buckets")
			} else {
				spec["buckets"] = keep
			}
			again := s.do(0, "POST", "/admin/skus", "", spec)
			require.Equal(t, http.StatusOK, again.Status, "buckets %v: %s", keep, again.Raw)
			assert.Equal(t, int64(4), again.Num("buckets"), "buckets %v keeps 4", keep)
		}

		before := s.audit(sku)
		spec["buckets"], spec["name"], spec["stock"] = 8, "Renamed", 5
		r = s.do(0, "POST", "/admin/skus", "", spec)
		assert.Equal(t, http.StatusConflict, r.Status, r.Raw)
		assert.Equal(t, "buckets_fixed", r.Str("error"), r.Raw)
		assert.Contains(t, r.Str("detail"), "has 4, asked for 8", r.Raw)
		after := s.audit(sku)
		assert.Equal(t, before.Stock, after.Stock, "SQL keeps its stock")
		assert.Equal(t, *before.RedisLeft, *after.RedisLeft, "Redis keeps its stock: the cut was not applied")
		shopper = s.do(0, "GET", fmt.Sprintf("/api/v1/skus/%d", sku), "", nil)
		assert.Equal(t, "Phone", shopper.Str("name"), "the refused update wrote nothing")
		assert.Equal(t, int64(9), shopper.Num("stock_left"))
	}
	t.Run("mysql", func(t *testing.T) { check(t, startSale(t, saleOpts{})) })
	t.Run("embedded", func(t *testing.T) { check(t, startSale(t, saleOpts{embedded: true})) })
}

// The largest SKU id works end to end on both SQL backends; once it is used,
// a SKU without an id is refused, since the database has none left to give.
func TestLargestSKUID(t *testing.T) {
	const top = "9223372036854775807"
	check := func(t *testing.T, s *deployment) {
		spec := func(id string) string {
			now := time.Now().UTC()
			b, _ := json.Marshal(map[string]any{"name": "Phone", "price_cents": 100, "stock": 5, "per_user_limit": 2,
				"starts_at": now.Add(-time.Minute), "ends_at": now.Add(time.Hour)})
			if id == "" {
				return string(b)
			}
			return `{"id":` + id + `,` + string(b[1:])
		}
		r := s.do(0, "POST", "/admin/skus", "", spec(top))
		require.Equal(t, http.StatusCreated, r.Status, r.Raw)
		var created struct{ ID uint64 }
		require.NoError(t, json.Unmarshal([]byte(r.Raw), &created))
		assert.Equal(t, uint64(math.MaxInt64), created.ID)

		r = s.do(0, "GET", "/api/v1/skus/"+top, "", nil)
		assert.Equal(t, http.StatusOK, r.Status, r.Raw)
		r = s.do(0, "POST", "/api/v1/orders", "u", `{"sku_id":`+top+`,"qty":1}`)
		assert.Equal(t, http.StatusAccepted, r.Status, r.Raw)
		r = s.do(0, "GET", "/admin/skus/"+top+"/audit", "", nil)
		assert.Equal(t, http.StatusOK, r.Status, r.Raw)

		r = s.do(0, "POST", "/admin/skus", "", spec(""))
		assert.Equal(t, http.StatusBadRequest, r.Status, r.Raw)
		assert.Equal(t, "invalid_request", r.Str("error"), r.Raw)
		var skus int64
		s.apps[0].DB.Raw("SELECT COUNT(*) FROM skus").Scan(&skus)
		assert.Equal(t, int64(1), skus)
	}
	t.Run("mysql", func(t *testing.T) { check(t, startSale(t, saleOpts{noWorkers: true})) })
	t.Run("embedded", func(t *testing.T) { check(t, startSale(t, saleOpts{embedded: true, noWorkers: true})) })
}
