package app

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/api/client"
	"github.com/seckill/seckill/internal/testutil"
)

type listedSKU struct {
	ID           uint64 `json:"id"`
	State        string `json:"state"`
	StockLeft    int64  `json:"stock_left"`
	Buckets      int64  `json:"buckets"`
	Sold         int64  `json:"sold"`
	RedisLeft    *int64 `json:"redis_left"`
	QueuedOrders int64  `json:"queued_orders"`
	DeadLetters  int64  `json:"dead_letters"`
	Orders       int64  `json:"orders"`
	Pending      int64  `json:"pending_payment"`
	Paid         int64  `json:"paid"`
}

// listAll follows a list's pages from path (which has a query) and returns
// the items of this test's SKUs (other tests' SKUs share the database).
func (s *deployment) listAll(i int, path string, ours map[uint64]bool) []listedSKU {
	s.t.Helper()
	var out []listedSKU
	cursor := ""
	for range 1000 {
		r := s.do(i, "GET", path+cursor, "", nil)
		require.Equal(s.t, http.StatusOK, r.Status, r.Raw)
		var p struct {
			Items      []listedSKU `json:"items"`
			NextCursor string      `json:"next_cursor"`
		}
		require.NoError(s.t, json.Unmarshal([]byte(r.Raw), &p))
		for _, it := range p.Items {
			if ours[it.ID] {
				out = append(out, it)
			}
		}
		if p.NextCursor == "" {
			return out
		}
		cursor = "&cursor=" + p.NextCursor
	}
	s.t.Fatal("the list never ended")
	return nil
}

// seedWindow creates a SKU on sale from starts to ends.
func (s *deployment) seedWindow(stock int64, starts, ends time.Time) uint64 {
	s.t.Helper()
	return s.seedSpec(client.SKUSpec{Name: ptr("Phone"), PriceCents: ptr(int64(100)), Stock: &stock, PerUserLimit: ptr(1), StartsAt: &starts, EndsAt: &ends})
}

// TestListingAndEndingASale: shoppers list sales by state, page by page,
// from a list at most a second old; an admin lists SKUs with their figures
// and ends a live sale, after which no instance accepts a buy, even one
// whose cached window is older.
func TestListingAndEndingASale(t *testing.T) {
	for _, o := range []saleOpts{{instances: 2}, {embedded: true}} {
		name := "mysql"
		if o.embedded {
			name = "embedded"
		}
		t.Run(name, func(t *testing.T) {
			s := startSale(t, o)
			now := time.Now().UTC()
			live := s.seedWindow(5, now.Add(-time.Minute), now.Add(time.Hour))
			soldOut := s.seedWindow(1, now.Add(-time.Minute), now.Add(time.Hour))
			upcoming := s.seedWindow(5, now.Add(time.Hour), now.Add(2*time.Hour))
			ended := s.seedWindow(5, now.Add(-2*time.Hour), now.Add(-time.Hour))
			ours := map[uint64]bool{live: true, soldOut: true, upcoming: true, ended: true}
			require.Equal(t, http.StatusAccepted, s.buy(0, soldOut, "alice", 1).Status)
			bought := s.buy(len(s.urls)-1, live, "bob", 1) // caches live's window there
			require.Equal(t, http.StatusAccepted, bought.Status, bought.Raw)
			mine := s.do(0, "GET", "/api/v1/orders", "bob", nil)
			require.Equal(t, http.StatusOK, mine.Status, mine.Raw)
			assert.Contains(t, mine.Raw, bought.Str("order_id"), "bob's list has his order")
			time.Sleep(1100 * time.Millisecond) // the list is at most a second old

			ids := func(items []listedSKU) []uint64 {
				var out []uint64
				for _, it := range items {
					out = append(out, it.ID)
				}
				return out
			}
			assert.Equal(t, []uint64{live, soldOut, upcoming}, ids(s.listAll(0, "/api/v1/skus?limit=1", ours)),
				"default: upcoming, live and sold out (units may come back), by id")
			assert.Equal(t, []uint64{soldOut}, ids(s.listAll(0, "/api/v1/skus?state=sold_out", ours)))
			assert.Equal(t, []uint64{soldOut, ended}, ids(s.listAll(0, "/api/v1/skus?state=ended,sold_out&limit=2", ours)))
			all := s.listAll(0, "/api/v1/skus?state=upcoming,live,sold_out,ended&limit=100", ours)
			require.Len(t, all, 4)
			assert.EqualValues(t, 4, all[0].StockLeft, "live: 5 units, bob took one")

			admin := s.listAll(0, "/admin/skus?limit=3", ours)
			require.Len(t, admin, 4)
			assert.Equal(t, live, admin[0].ID)
			require.NotNil(t, admin[0].RedisLeft)
			assert.EqualValues(t, 4, *admin[0].RedisLeft)
			s.drained(live)
			admin = s.listAll(0, "/admin/skus?limit=100", ours)
			assert.EqualValues(t, 1, admin[0].Sold)
			assert.Zero(t, admin[0].QueuedOrders)
			assert.Zero(t, admin[0].DeadLetters)
			assert.EqualValues(t, 1, admin[0].Orders)
			assert.EqualValues(t, 1, admin[0].Pending, "bob has not paid")
			assert.Zero(t, admin[0].Paid)

			// Ending the live sale: answered 200 ended, then no instance sells.
			r := s.do(0, "POST", fmt.Sprintf("/admin/skus/%d/end", live), "", nil)
			require.Equal(t, http.StatusOK, r.Status, r.Raw)
			assert.Equal(t, "ended", r.Str("state"))
			for i := range s.urls {
				b := s.buy(i, live, fmt.Sprintf("carol-%d", i), 1)
				assert.Equal(t, http.StatusForbidden, b.Status, "instance %d: %s", i, b.Raw)
				assert.Equal(t, "sale_ended", b.Str("error"), "instance %d", i)
			}
			again := s.do(len(s.urls)-1, "POST", fmt.Sprintf("/admin/skus/%d/end", live), "", nil)
			require.Equal(t, http.StatusOK, again.Status, "ending twice is fine: %s", again.Raw)
			assert.Equal(t, r.Str("ends_at"), again.Str("ends_at"), "the second end changes nothing")
			up := s.do(0, "POST", fmt.Sprintf("/admin/skus/%d/end", upcoming), "", nil)
			require.Equal(t, http.StatusOK, up.Status, up.Raw)
			assert.Equal(t, "ended", up.Str("state"), "an upcoming sale ends before it starts")
			rep := s.drained(live)
			assert.True(t, rep.Consistent, "%+v", rep)
			assert.EqualValues(t, 1, rep.Sold)

			for _, path := range []string{"/admin/skus/999999999/end", "/admin/skus/999999999/reconcile"} {
				r := s.do(0, "POST", path, "", nil)
				assert.Equal(t, http.StatusNotFound, r.Status, "%s: %s", path, r.Raw)
			}
		})
	}
}

// TestShopperListsOwnOrders: a shopper's list has their orders newest first,
// queued ones included, each once as the drain moves them to MySQL, page by
// page; nobody else's.
func TestShopperListsOwnOrders(t *testing.T) {
	s := startSale(t, saleOpts{noWorkers: true})
	var skus []uint64
	for range 3 {
		skus = append(skus, s.seed(10, 5))
	}
	list := func(user, query string) (ids []string, statuses []string) {
		t.Helper()
		cursor := ""
		for range 100 {
			r := s.do(0, "GET", "/api/v1/orders?"+query+cursor, user, nil)
			require.Equal(t, http.StatusOK, r.Status, r.Raw)
			var p struct {
				Items []struct {
					OrderID string `json:"order_id"`
					User    string `json:"user_id"`
					Status  string `json:"status"`
				} `json:"items"`
				NextCursor string `json:"next_cursor"`
			}
			require.NoError(t, json.Unmarshal([]byte(r.Raw), &p))
			for _, it := range p.Items {
				require.Equal(t, user, it.User)
				ids = append(ids, it.OrderID)
				statuses = append(statuses, it.Status)
			}
			if p.NextCursor == "" {
				return ids, statuses
			}
			cursor = "&cursor=" + p.NextCursor
		}
		t.Fatal("the list never ended")
		return nil, nil
	}

	var want []string // newest first
	for i, sku := range skus {
		want = append([]string{s.order(0, sku, "alice")}, want...)
		if i == 0 {
			require.Equal(t, http.StatusAccepted, s.buy(0, sku, "bob", 1).Status)
		}
		time.Sleep(2 * time.Millisecond) // distinct creation times
	}
	ids, statuses := list("alice", "limit=2")
	assert.Equal(t, want, ids, "queued orders, newest first, over two pages")
	assert.Equal(t, []string{"queued", "queued", "queued"}, statuses)
	bob, _ := list("bob", "")
	assert.Len(t, bob, 1, "bob's own order only")
	none, _ := list("carol", "")
	assert.Empty(t, none)

	// The drain moves them to MySQL; a new order may still be queued.
	s.workers = true
	s.start()
	for _, sku := range skus {
		s.drained(sku)
	}
	want = append([]string{s.order(1, skus[1], "alice")}, want...)
	for _, limit := range []string{"limit=1", "limit=3", "limit=100"} {
		ids, statuses = list("alice", limit)
		assert.Equal(t, want, ids, "%s: every order once, newest first", limit)
		for _, st := range statuses[1:] {
			assert.Equal(t, "pending_payment", st)
		}
		assert.Contains(t, []string{"queued", "pending_payment"}, statuses[0])
	}
	for _, q := range []string{"cursor=x", "limit=0", "limit=101", "cursor=" + "b3JkZXI6LTE6YQ"} {
		r := s.do(0, "GET", "/api/v1/orders?"+q, "alice", nil)
		assert.Equal(t, http.StatusBadRequest, r.Status, "%s: %s", q, r.Raw)
	}
	assert.Equal(t, http.StatusUnauthorized, s.do(0, "GET", "/api/v1/orders", "", nil).Status)
}

// TestReplayAnswersTheOrdersStatusNow: a retry with the same request_id gets
// the order it got, with its status as it is now, not "queued".
func TestReplayAnswersTheOrdersStatusNow(t *testing.T) {
	s := startSale(t, saleOpts{})
	sku := s.seed(10, 2)
	buy := func(user, rid string) testutil.Reply {
		return s.do(0, "POST", "/api/v1/orders", user, map[string]any{"sku_id": sku, "qty": 1, "request_id": rid})
	}
	first := buy("alice", "r-pay")
	require.Equal(t, http.StatusAccepted, first.Status, first.Raw)
	assert.Equal(t, "queued", first.Str("status"))
	id := first.Str("order_id")
	s.waitStatus("alice", id, "pending_payment")
	again := buy("alice", "r-pay")
	require.Equal(t, http.StatusAccepted, again.Status, again.Raw)
	assert.Equal(t, id, again.Str("order_id"))
	assert.Equal(t, "pending_payment", again.Str("status"))

	require.Equal(t, http.StatusOK, s.do(0, "POST", "/api/v1/orders/"+id+"/pay", "alice", nil).Status)
	paid := buy("alice", "r-pay")
	require.Equal(t, http.StatusAccepted, paid.Status, paid.Raw)
	assert.Equal(t, id, paid.Str("order_id"))
	assert.Equal(t, "paid", paid.Str("status"))
}

// A sale ended before it started keeps a window of no length (before its
// waiting room's opening, if it has one), and its other fields can still
// change: the window is judged only by a change that moves it.
func TestASaleEndedBeforeItStartedCanStillChange(t *testing.T) {
	s := startSale(t, saleOpts{})
	now := time.Now().UTC().Truncate(time.Second)
	r := s.do(0, "POST", "/admin/skus", "", skuBody(map[string]any{"id": 9201,
		"starts_at": now.Add(time.Hour), "ends_at": now.Add(2 * time.Hour),
		"waiting_room": map[string]any{"opens_at": now.Add(30 * time.Minute)}}))
	require.Equal(t, http.StatusCreated, r.Status, r.Raw)
	r = s.do(0, "POST", "/admin/skus/9201/end", "", nil)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	r = s.do(0, "PUT", "/admin/skus/9201/stock", "", map[string]any{"stock": 20})
	assert.Equal(t, http.StatusOK, r.Status, "set stock after end: %s", r.Raw)
	r = s.do(0, "PATCH", "/admin/skus/9201", "", map[string]any{"name": "Renamed"})
	assert.Equal(t, http.StatusOK, r.Status, "rename after end: %s", r.Raw)

	r = s.do(0, "PATCH", "/admin/skus/9201", "", map[string]any{"ends_at": now.Add(3 * time.Hour)})
	assert.Equal(t, http.StatusBadRequest, r.Status, "a window moved is judged: %s", r.Raw)

	// Without a room too.
	r = s.do(0, "POST", "/admin/skus", "", skuBody(map[string]any{"id": 9202,
		"starts_at": now.Add(time.Hour), "ends_at": now.Add(2 * time.Hour)}))
	require.Equal(t, http.StatusCreated, r.Status, r.Raw)
	r = s.do(0, "POST", "/admin/skus/9202/end", "", nil)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	r = s.do(0, "PUT", "/admin/skus/9202/stock", "", map[string]any{"stock": 20})
	assert.Equal(t, http.StatusOK, r.Status, "set stock after end (no room): %s", r.Raw)
}
