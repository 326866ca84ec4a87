package app

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/seckill/seckill/api/client"
	"github.com/seckill/seckill/internal/testutil"
)

// Support staff find any order and cancel it by hand: GET /admin/orders,
// GET /admin/orders/{order_id} and POST /admin/orders/{order_id}/cancel.

// supportList follows the pages of GET /admin/orders with p from instance i
// and returns every order listed.
func (s *deployment) supportList(i int, p client.AdminListOrdersParams) []client.AdminOrder {
	s.t.Helper()
	var out []client.AdminOrder
	for range 1000 {
		r, err := s.api[i%len(s.api)].AdminListOrdersWithResponse(context.Background(), &p, asAdmin)
		require.NoError(s.t, err)
		require.Equal(s.t, http.StatusOK, r.StatusCode(), "%s", r.Body)
		out = append(out, r.JSON200.Items...)
		if r.JSON200.NextCursor == nil {
			return out
		}
		require.NotEmpty(s.t, r.JSON200.Items, "a page with a next_cursor has items")
		p.Cursor = r.JSON200.NextCursor
	}
	s.t.Fatal("the list never ended")
	return nil
}

// supportGet reads one order through GET /admin/orders/{order_id}.
func (s *deployment) supportGet(i int, id string) (testutil.Reply, *client.AdminOrder) {
	s.t.Helper()
	r, err := s.api[i%len(s.api)].AdminGetOrderWithResponse(context.Background(), id, asAdmin)
	require.NoError(s.t, err)
	return testutil.NewReply(r.HTTPResponse, r.Body), r.JSON200
}

// supportCancel cancels an order through POST /admin/orders/{order_id}/cancel.
func (s *deployment) supportCancel(i int, id, reason string) (testutil.Reply, *client.AdminOrder) {
	s.t.Helper()
	r, err := s.api[i%len(s.api)].AdminCancelOrderWithResponse(context.Background(), id,
		client.AdminCancelRequest{Reason: reason}, asAdmin)
	require.NoError(s.t, err)
	return testutil.NewReply(r.HTTPResponse, r.Body), r.JSON200
}

// pay pays an order as its shopper through the generated client.
func (s *deployment) pay(i int, user, id string) testutil.Reply {
	s.t.Helper()
	r, err := s.api[i%len(s.api)].PayOrderWithResponse(context.Background(), id, s.as(user))
	require.NoError(s.t, err)
	return testutil.NewReply(r.HTTPResponse, r.Body)
}

// placedOrder is what a test knows of an order it placed.
type placedOrder struct {
	id     string
	sku    uint64
	user   string
	status string
	refund string
}

// expect lists the orders (placed oldest first) that match the filters,
// newest first, as GET /admin/orders must.
func expect(placed []placedOrder, sku uint64, user string, statuses ...string) []string {
	var ids []string
	for i := len(placed) - 1; i >= 0; i-- {
		o := placed[i]
		if (sku == 0 || o.sku == sku) && (user == "" || o.user == user) && (len(statuses) == 0 || slices.Contains(statuses, o.status)) {
			ids = append(ids, o.id)
		}
	}
	return ids
}

func orderIDs(list []client.AdminOrder) []string {
	var ids []string
	for _, o := range list {
		ids = append(ids, o.OrderId)
	}
	return ids
}

// TestSupportFindsOrders: GET /admin/orders lists the orders matching each
// filter alone and every combination, newest first, page by page, with
// queued orders (of a SKU split into buckets too) when a SKU is named; a
// cursor keeps its place while new orders come in; GET /admin/orders/{id}
// finds any order, queued ones included.
func TestSupportFindsOrders(t *testing.T) {
	onBackends(t, saleOpts{noWorkers: true}, func(t *testing.T, s *deployment) {
		now := time.Now().UTC()
		a := s.seed(20, 10)
		b := s.seedSpec(client.SKUSpec{Name: ptr("Split"), PriceCents: ptr(int64(500)), Stock: ptr(int64(20)), PerUserLimit: ptr(10),
			Buckets: ptr(4), StartsAt: ptr(now.Add(-time.Minute)), EndsAt: ptr(now.Add(time.Hour))})
		var placed []placedOrder
		for _, o := range []struct {
			sku  uint64
			user string
		}{{a, "alice"}, {a, "bob"}, {b, "alice"}, {b, "carol"}, {a, "alice"}, {b, "bob"}, {a, "carol"}} {
			placed = append(placed, placedOrder{id: s.order(0, o.sku, o.user), sku: o.sku, user: o.user, status: "queued", refund: "none"})
			time.Sleep(3 * time.Millisecond) // distinct creation times
		}

		// No worker yet: every order is queued, in Redis only.
		for i, o := range placed {
			r, got := s.supportGet(i, o.id)
			require.Equal(t, http.StatusOK, r.Status, r.Raw)
			assert.EqualValues(t, "queued", got.Status)
			assert.Equal(t, o.user, got.UserId)
			assert.EqualValues(t, o.sku, got.SkuId)
			assert.EqualValues(t, "none", got.Refund)
			assert.Nil(t, got.CancelReason)
		}
		for _, limit := range []int{1, 2, 100} {
			l := ptr(limit)
			assert.Equal(t, expect(placed, a, ""), orderIDs(s.supportList(0, client.AdminListOrdersParams{SkuId: ptr(int64(a)), Limit: l})), "sku a, limit %d", limit)
			assert.Equal(t, expect(placed, b, ""), orderIDs(s.supportList(1, client.AdminListOrdersParams{SkuId: ptr(int64(b)), Limit: l})), "sku b (4 buckets), limit %d", limit)
		}
		assert.Equal(t, expect(placed, a, "alice"), orderIDs(s.supportList(0, client.AdminListOrdersParams{SkuId: ptr(int64(a)), UserId: ptr("alice")})))
		assert.Equal(t, expect(placed, b, "", "queued"), orderIDs(s.supportList(0, client.AdminListOrdersParams{SkuId: ptr(int64(b)), Status: ptr("queued")})))
		assert.Empty(t, s.supportList(0, client.AdminListOrdersParams{SkuId: ptr(int64(a)), Status: ptr("pending_payment,paid")}))
		assert.Empty(t, s.supportList(0, client.AdminListOrdersParams{}), "without a SKU the list is MySQL's: empty so far")
		assert.Empty(t, s.supportList(0, client.AdminListOrdersParams{UserId: ptr("alice")}))
		r, _ := s.supportCancel(0, placed[0].id, "not yet")
		assert.Equal(t, http.StatusConflict, r.Status, r.Raw)
		assert.Equal(t, "order_queued", r.Str("error"))
		assert.Equal(t, "1", r.Header.Get("Retry-After"))

		// The drain moves them to MySQL; shoppers and staff act on them.
		s.workers = true
		s.start()
		s.drained(a)
		s.drained(b)
		for i := range placed {
			placed[i].status = "pending_payment"
		}
		for _, i := range []int{0, 2, 5} {
			p := s.pay(0, placed[i].user, placed[i].id)
			require.Equal(t, http.StatusOK, p.Status, p.Raw)
			placed[i].status = "paid"
		}
		c := s.do(0, "POST", "/api/v1/orders/"+placed[3].id+"/cancel", placed[3].user, nil)
		require.Equal(t, http.StatusOK, c.Status, c.Raw)
		placed[3].status = "cancelled"
		for _, i := range []int{5, 1} {
			r, got := s.supportCancel(0, placed[i].id, "asked by phone")
			require.Equal(t, http.StatusOK, r.Status, r.Raw)
			assert.EqualValues(t, "cancelled", got.Status)
			if placed[i].status == "paid" {
				placed[i].refund = "due"
			}
			placed[i].status = "cancelled"
		}

		for i, o := range placed {
			r, got := s.supportGet(i, o.id)
			require.Equal(t, http.StatusOK, r.Status, r.Raw)
			assert.EqualValues(t, o.status, got.Status, "order %d", i)
			assert.EqualValues(t, o.refund, got.Refund, "order %d", i)
			assert.Equal(t, o.status == "paid" || o.refund == "due", got.PaidAt != nil, "order %d: paid_at", i)
			assert.Equal(t, o.status == "cancelled", got.ClosedAt != nil, "order %d: closed_at", i)
		}
		_, shopperCancelled := s.supportGet(0, placed[3].id)
		assert.Nil(t, shopperCancelled.CancelReason, "a shopper's cancel has no reason")

		type query struct {
			sku      uint64
			user     string
			statuses []string
		}
		var queries []query
		for _, sku := range []uint64{0, a, b} {
			for _, user := range []string{"", "alice", "bob", "carol"} {
				for _, st := range [][]string{nil, {"paid"}, {"cancelled"}, {"pending_payment", "cancelled"}, {"expired", "failed"},
					{"queued", "pending_payment", "paid", "cancelled", "expired", "failed"}} {
					if slices.Contains(st, "queued") && sku == 0 {
						continue
					}
					queries = append(queries, query{sku, user, st})
				}
			}
		}
		for qi, q := range queries {
			var p client.AdminListOrdersParams
			if q.sku != 0 {
				p.SkuId = ptr(int64(q.sku))
			}
			if q.user != "" {
				p.UserId = ptr(q.user)
			}
			if q.statuses != nil {
				p.Status = ptr(strings.Join(q.statuses, ","))
			}
			want := expect(placed, q.sku, q.user, q.statuses...)
			p.Limit = ptr(1 + qi%3)
			got := s.supportList(qi, p)
			assert.Equal(t, want, orderIDs(got), "sku %d user %q status %v limit %d", q.sku, q.user, q.statuses, *p.Limit)
		}
		assert.Empty(t, s.supportList(0, client.AdminListOrdersParams{SkuId: ptr(int64(987654))}), "an unknown SKU has no orders")
		assert.Empty(t, s.supportList(0, client.AdminListOrdersParams{UserId: ptr("nobody")}))
		assert.Empty(t, s.supportList(0, client.AdminListOrdersParams{SkuId: ptr(int64(a)), Status: ptr("queued")}), "all drained")

		// A cursor keeps its place: orders placed after the first page come
		// before it, and the pages after it are the ones the list had.
		all := expect(placed, 0, "")
		first, err := s.api[0].AdminListOrdersWithResponse(context.Background(), &client.AdminListOrdersParams{Limit: ptr(3)}, asAdmin)
		require.NoError(t, err)
		require.NotNil(t, first.JSON200, "%s", first.Body)
		require.NotNil(t, first.JSON200.NextCursor)
		assert.Equal(t, all[:3], orderIDs(first.JSON200.Items))
		late := s.order(0, a, "dave")
		s.waitStatus("dave", late, "pending_payment")
		rest := s.supportList(1, client.AdminListOrdersParams{Limit: ptr(2), Cursor: first.JSON200.NextCursor})
		assert.Equal(t, all[3:], orderIDs(rest), "the same pages after the cursor, nothing twice or missed")
		assert.Equal(t, append([]string{late}, all...), orderIDs(s.supportList(0, client.AdminListOrdersParams{Limit: ptr(4)})))
		byA := s.supportList(0, client.AdminListOrdersParams{SkuId: ptr(int64(a)), Limit: ptr(2)})
		assert.Equal(t, append([]string{late}, expect(placed, a, "")...), orderIDs(byA))
	})
}

// Bad filters, cursors and cancel bodies are 400 invalid_request and change
// nothing; a malformed or unknown order id is 404; without the admin token
// 401, and with the admin API off 403.
func TestSupportBadInput(t *testing.T) {
	s := startSale(t, saleOpts{})
	sku := s.seed(5, 1)
	id := s.order(0, sku, "alice")
	s.waitStatus("alice", id, "pending_payment")
	before := s.audit(sku)

	skuCursor := "c2t1OjU" // base64url of "sku:5": a SKU list's cursor
	for _, q := range []string{
		"sku_id=abc", "sku_id=0", "sku_id=-1", "sku_id=1.5", "sku_id=9223372036854775808", "sku_id=",
		"user_id=", "user_id=a%20b", "user_id=" + strings.Repeat("u", 65), "user_id=x'%20OR%20'1'='1",
		"status=bogus", "status=", "status=paid,", "status=PAID", "status=queued", "user_id=alice&status=queued",
		"limit=0", "limit=101", "limit=x", "limit=",
		"cursor=", "cursor=junk", "cursor=" + skuCursor, "cursor=" + strings.Repeat("A", 300),
	} {
		r := s.do(0, "GET", "/admin/orders?"+q, "", nil)
		assert.Equal(t, http.StatusBadRequest, r.Status, "%s: %s", q, r.Raw)
		assert.Equal(t, "invalid_request", r.Str("error"), q)
		assert.NotEmpty(t, r.Str("detail"), q)
	}

	path := "/admin/orders/" + id + "/cancel"
	for _, tc := range []struct {
		name   string
		body   any
		status int
	}{
		{"no body", nil, 400},
		{"empty object", `{}`, 400},
		{"empty reason", `{"reason":""}`, 400},
		{"blank reason", `{"reason":"  \t "}`, 400},
		{"reason too long", `{"reason":"` + strings.Repeat("é", 501) + `"}`, 400},
		{"reason a number", `{"reason":5}`, 400},
		{"reason null", `{"reason":null}`, 400},
		{"unknown field", `{"reason":"x","refund":"none"}`, 400},
		{"control character", `{"reason":"a\u0000b"}`, 400},
		{"escape character", `{"reason":"a\u001bb"}`, 400},
		{"malformed", `{"reason":`, 400},
		{"two objects", `{"reason":"x"}{}`, 400},
		{"body over 16 KiB", `{"reason":"` + strings.Repeat("x", 17<<10) + `"}`, 413},
	} {
		r := s.do(0, "POST", path, "", tc.body)
		assert.Equal(t, tc.status, r.Status, "%s: %s", tc.name, r.Raw)
		assert.Equal(t, "invalid_request", r.Str("error"), tc.name)
	}
	_, got := s.supportGet(0, id)
	require.NotNil(t, got)
	assert.EqualValues(t, "pending_payment", got.Status, "nothing changed")
	assert.Nil(t, got.CancelReason)
	after := s.audit(sku)
	assert.Equal(t, before.PendingPayment, after.PendingPayment)
	assert.Equal(t, before.Sold, after.Sold)
	assert.Equal(t, *before.RedisLeft, *after.RedisLeft)
	// 500 characters is the longest reason.
	r, ok := s.supportCancel(0, id, strings.Repeat("é", 500))
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	assert.Equal(t, strings.Repeat("é", 500), *ok.CancelReason)

	for _, tc := range []struct{ method, path string }{
		{"GET", "/admin/orders/' OR 1=1"},
		{"GET", "/admin/orders/1-zzzzzzzzzzzzzzzzzzzzzzzz"},
		{"GET", fmt.Sprintf("/admin/orders/%d-zzzzzzzzzzzzzzzzzzzzzzzz", sku)},
		{"GET", fmt.Sprintf("/admin/orders/%d.3-zzzzzzzzzzzzzzzzzzzzzzzz", sku)},
		{"POST", "/admin/orders/' OR 1=1/cancel"},
		{"POST", "/admin/orders/9223372036854775807-zzzzzzzzzzzzzzzzzzzzzzzz/cancel"},
		{"POST", fmt.Sprintf("/admin/orders/%d-zzzzzzzzzzzzzzzzzzzzzzzz/cancel", sku)},
	} {
		var body any
		if tc.method == "POST" {
			body = map[string]string{"reason": "test"}
		}
		r := s.do(0, tc.method, tc.path, "", body)
		assert.Equal(t, http.StatusNotFound, r.Status, "%s %s: %s", tc.method, tc.path, r.Raw)
		assert.Equal(t, "not_found", r.Str("error"), tc.path)
	}

	for _, p := range []string{"/admin/orders", "/admin/orders/" + id} {
		req, err := http.NewRequest("GET", s.urls[0]+p, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer wrong")
		r, err := s.caller().Send(req)
		require.NoError(t, err)
		assert.Equal(t, http.StatusUnauthorized, r.Status, p)
	}
	off := startSale(t, saleOpts{env: map[string]string{"SECKILL_ADMIN_TOKEN": ""}})
	for _, tc := range []struct{ method, path string }{
		{"GET", "/admin/orders"}, {"GET", "/admin/orders/" + id}, {"POST", "/admin/orders/" + id + "/cancel"},
	} {
		r := off.do(0, tc.method, tc.path, "", map[string]string{"reason": "x"})
		assert.Equal(t, http.StatusForbidden, r.Status, tc.path)
		assert.Equal(t, "admin_disabled", r.Str("error"), tc.path)
	}
}

// TestSupportCancels: staff cancel a pending order and a paid one with a
// reason; the paid one owes a refund; each one's unit comes back on sale
// once, and sells again; a second cancel changes nothing; the shopper sees
// the order cancelled; each cancel is logged at warn and counted.
func TestSupportCancels(t *testing.T) {
	check := func(t *testing.T, s *deployment, logs *testutil.SyncBuffer) {
		sku := s.seed(1, 1)
		alice := s.order(0, sku, "alice")
		s.waitStatus("alice", alice, "pending_payment")
		assert.Equal(t, "sold_out", s.buy(0, sku, "bob", 1).Str("error"))

		r, got := s.supportCancel(0, alice, "duplicate purchase")
		require.Equal(t, http.StatusOK, r.Status, r.Raw)
		assert.EqualValues(t, "cancelled", got.Status)
		assert.EqualValues(t, "none", got.Refund, "an unpaid order owes nothing")
		assert.Equal(t, "duplicate purchase", *got.CancelReason)
		assert.NotNil(t, got.ClosedAt)
		assert.Nil(t, got.PaidAt)
		assert.Equal(t, "alice", got.UserId)
		assert.Equal(t, "cancelled", s.waitStatus("alice", alice, "cancelled").Str("status"), "the shopper sees it cancelled")

		bob := s.order(len(s.urls)-1, sku, "bob")
		s.waitStatus("bob", bob, "pending_payment")
		require.Equal(t, http.StatusOK, s.pay(0, "bob", bob).Status)
		assert.Equal(t, "sold_out", s.buy(0, sku, "carol", 1).Str("error"))

		r, got = s.supportCancel(len(s.urls)-1, bob, "  card reported stolen \n")
		require.Equal(t, http.StatusOK, r.Status, r.Raw)
		assert.EqualValues(t, "cancelled", got.Status)
		assert.EqualValues(t, "due", got.Refund, "a paid order cancelled by staff owes a refund")
		assert.Equal(t, "card reported stolen", *got.CancelReason, "trimmed")
		require.NotNil(t, got.PaidAt)
		require.NotNil(t, got.ClosedAt)
		assert.False(t, got.ClosedAt.Before(*got.PaidAt))
		closedAt := *got.ClosedAt

		// Again, on any instance: the same order, the first reason.
		for i := range s.urls {
			again, same := s.supportCancel(i, bob, "another reason")
			require.Equal(t, http.StatusOK, again.Status, again.Raw)
			assert.Equal(t, "card reported stolen", *same.CancelReason)
			assert.EqualValues(t, "due", same.Refund)
			assert.True(t, closedAt.Equal(*same.ClosedAt))
		}
		shopper := s.do(0, "GET", "/api/v1/orders/"+bob, "bob", nil)
		assert.Equal(t, "cancelled", shopper.Str("status"))
		assert.NotContains(t, shopper.Raw, "refund", "the shopper's view is unchanged")
		late := s.pay(0, "bob", bob)
		assert.Equal(t, http.StatusConflict, late.Status)
		assert.Equal(t, "order_closed", late.Str("error"))
		sc := s.do(0, "POST", "/api/v1/orders/"+bob+"/cancel", "bob", nil)
		assert.Equal(t, http.StatusOK, sc.Status, "the shopper's cancel of a cancelled order: %s", sc.Raw)
		_, still := s.supportGet(0, bob)
		assert.Equal(t, "card reported stolen", *still.CancelReason)
		assert.EqualValues(t, "due", still.Refund)

		// The unit came back once: carol buys it, then it is sold out.
		carol := s.buy(0, sku, "carol", 1)
		require.Equal(t, http.StatusAccepted, carol.Status, carol.Raw)
		assert.Equal(t, "sold_out", s.buy(0, sku, "dave", 1).Str("error"))
		rep := s.drained(sku)
		assert.True(t, rep.Consistent, "%+v", rep)
		assert.Equal(t, int64(2), rep.Cancelled)
		assert.Equal(t, int64(1), rep.PendingPayment)
		assert.Equal(t, int64(1), rep.Sold)
		assert.Equal(t, int64(0), *rep.RedisLeft)

		list := s.supportList(0, client.AdminListOrdersParams{SkuId: ptr(int64(sku)), Status: ptr("cancelled")})
		assert.Equal(t, []string{bob, alice}, orderIDs(list))
		if logs != nil {
			out := logs.String()
			for _, want := range []string{alice, bob, "duplicate purchase", "card reported stolen"} {
				assert.Contains(t, out, want)
			}
			assert.Equal(t, 2, strings.Count(out, "order cancelled by support"), "one warning per cancel that changed the order")
			m := s.do(0, "GET", "/metrics", "", nil)
			assert.Contains(t, m.Raw, `seckill_orders_transitions_total{status="cancelled"} `)
		}
	}
	t.Run("mysql", func(t *testing.T) {
		logs := &testutil.SyncBuffer{}
		check(t, startSale(t, saleOpts{log: logs}), logs)
	})
	t.Run("cluster-3", func(t *testing.T) { check(t, startSale(t, saleOpts{cluster: true, instances: 3}), nil) })
	t.Run("embedded", func(t *testing.T) { check(t, startSale(t, saleOpts{embedded: true}), nil) })
}

// An expired order, a failed one and a queued one cannot be cancelled by
// staff: 409 order_closed, order_closed and order_queued (Retry-After).
func TestSupportCancelOfClosedAndQueuedOrders(t *testing.T) {
	s := startSale(t, saleOpts{env: map[string]string{"SECKILL_ORDER_PAYMENT_TIMEOUT": "1s"}})
	sku := s.seed(3, 1)
	expired := s.order(0, sku, "alice")
	failed := s.order(0, sku, "bob")
	s.waitStatus("alice", expired, "expired")
	s.waitStatus("bob", failed, "expired")
	// A failed order is one the SQL stock guard refused; its closing is the
	// drain's. Only its status matters here.
	require.NoError(t, s.apps[0].DB.Exec("UPDATE orders SET status = 'failed' WHERE order_id = ?", failed).Error)
	for _, id := range []string{expired, failed} {
		r, _ := s.supportCancel(0, id, "too late")
		assert.Equal(t, http.StatusConflict, r.Status, r.Raw)
		assert.Equal(t, "order_closed", r.Str("error"), r.Raw)
		_, got := s.supportGet(0, id)
		assert.Nil(t, got.CancelReason, "nothing written")
		assert.EqualValues(t, "none", got.Refund)
	}

	q := startSale(t, saleOpts{noWorkers: true})
	qsku := q.seed(1, 1)
	queued := q.order(0, qsku, "carol")
	r, _ := q.supportCancel(0, queued, "not yet")
	assert.Equal(t, http.StatusConflict, r.Status, r.Raw)
	assert.Equal(t, "order_queued", r.Str("error"))
	assert.Equal(t, "1", r.Header.Get("Retry-After"))
	_, got := q.supportGet(0, queued)
	assert.EqualValues(t, "queued", got.Status, "still queued")
}

// A payment that commits between the staff cancel's read of the order and
// its update is not lost: the cancel cancels the paid order, which then owes
// a refund. An expiry that commits there wins: the cancel answers
// order_closed. Each order's unit comes back once.
func TestSupportCancelLosingTheRowToPayOrExpiry(t *testing.T) {
	s := startSale(t, saleOpts{})
	sku := s.seed(2, 1)
	paid := s.order(0, sku, "alice")
	expired := s.order(0, sku, "bob")
	s.waitStatus("alice", paid, "pending_payment")
	s.waitStatus("bob", expired, "pending_payment")

	db := s.apps[0].DB
	var first sync.Once
	var target string
	require.NoError(t, db.Callback().Update().Before("gorm:update").Register("test:commit-first", func(tx *gorm.DB) {
		m, ok := tx.Statement.Dest.(map[string]any)
		if !ok || m["status"] != "cancelled" || m["cancel_reason"] == nil {
			return
		}
		first.Do(func() {
			now := time.Now().UTC()
			if target == paid {
				// Another connection: the shopper's payment commits now.
				assert.NoError(t, db.Session(&gorm.Session{NewDB: true}).Exec(
					"UPDATE orders SET status = 'paid', paid_at = ?, updated_at = ? WHERE order_id = ?", now, now, paid).Error)
				return
			}
			// The payment deadline's expiry, in full, commits now.
			assert.NoError(t, s.apps[0].closer.Expire(context.Background(), expired, now.Add(time.Hour)))
		})
	}))
	t.Cleanup(func() { _ = db.Callback().Update().Remove("test:commit-first") })

	target = paid
	r, got := s.supportCancel(0, paid, "fraud")
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	assert.EqualValues(t, "cancelled", got.Status)
	assert.EqualValues(t, "due", got.Refund, "it was paid when it was cancelled")
	assert.NotNil(t, got.PaidAt)

	first = sync.Once{}
	target = expired
	r, _ = s.supportCancel(0, expired, "fraud")
	assert.Equal(t, http.StatusConflict, r.Status, r.Raw)
	assert.Equal(t, "order_closed", r.Str("error"))
	_, got = s.supportGet(0, expired)
	assert.EqualValues(t, "expired", got.Status)
	assert.Nil(t, got.CancelReason)

	rep := s.drained(sku)
	assert.True(t, rep.Consistent, "%+v", rep)
	assert.Equal(t, int64(0), rep.Sold)
	assert.Equal(t, int64(2), *rep.RedisLeft, "each unit back once")
}

// TestSupportCancelRacesPayAndDeadline: staff cancel orders while their
// shoppers pay them, around the payment deadline, on every instance. Each
// order has exactly one outcome: cancelled (owing a refund exactly when the
// payment was answered 200 before) or expired (then the cancel and the
// payment were refused); every unit comes back once and sells again.
func TestSupportCancelRacesPayAndDeadline(t *testing.T) {
	onBackends(t, saleOpts{env: map[string]string{"SECKILL_ORDER_PAYMENT_TIMEOUT": "1s"}}, func(t *testing.T, s *deployment) {
		const n = 60
		sku := s.seed(n, 1)
		ids := make([]string, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				r, _ := s.buyRetrying(i, sku, fmt.Sprintf("u%d", i), 1) // 503 busy is retried, as a client does
				if assert.Equal(t, http.StatusAccepted, r.Status, r.Raw) {
					ids[i] = r.Str("order_id")
				}
			})
		}
		wg.Wait()
		require.NotContains(t, ids, "")
		expires := make([]time.Time, n)
		for i := range n {
			require.Eventually(t, func() bool {
				_, o := s.supportGet(i, ids[i])
				if o == nil || o.Status == "queued" {
					return false
				}
				expires[i] = o.ExpiresAt
				return true
			}, 30*time.Second, 20*time.Millisecond, "order %s never persisted", ids[i])
		}

		// Around each deadline, from 300 ms before to 1.2 s after (the
		// expiry runs at most a second late), pay and cancel at once.
		pays := make([]int, n)
		cancels := make([]testutil.Reply, n)
		for i := range n {
			at := expires[i].Add(-300*time.Millisecond + time.Duration(i)*1500*time.Millisecond/n)
			wg.Go(func() {
				time.Sleep(time.Until(at))
				pays[i] = s.pay(i, fmt.Sprintf("u%d", i), ids[i]).Status
			})
			wg.Go(func() {
				time.Sleep(time.Until(at.Add(time.Duration(i%7) * time.Millisecond)))
				// A 503 (the store did not answer in time: TiDB, its row
				// locked by the pay or the expiry) is retried, as a
				// client does.
				for try := 0; ; try++ {
					cancels[i], _ = s.supportCancel(i+1, ids[i], fmt.Sprintf("race %d", i))
					if cancels[i].Status != http.StatusServiceUnavailable || cancels[i].Header.Get("Retry-After") == "" || try == 20 {
						return
					}
					time.Sleep(time.Duration(20+i%30) * time.Millisecond)
				}
			})
		}
		wg.Wait()

		var cancelled, expired, refunds int64
		for i := range n {
			c := cancels[i]
			var got *client.AdminOrder
			require.Eventually(t, func() bool {
				_, got = s.supportGet(i, ids[i])
				return got != nil && got.Status != "pending_payment"
			}, 30*time.Second, 50*time.Millisecond, "order %s never closed", ids[i])
			switch c.Status {
			case http.StatusOK:
				cancelled++
				assert.EqualValues(t, "cancelled", got.Status, "order %d", i)
				assert.Equal(t, fmt.Sprintf("race %d", i), *got.CancelReason)
				if pays[i] == http.StatusOK {
					refunds++
					assert.EqualValues(t, "due", got.Refund, "order %d: paid first, then cancelled", i)
				} else {
					// Refused, or 503 (the store did not answer): never paid.
					assert.Contains(t, []int{http.StatusConflict, http.StatusServiceUnavailable}, pays[i], "order %d", i)
					assert.EqualValues(t, "none", got.Refund, "order %d: never paid", i)
				}
			case http.StatusConflict:
				expired++
				assert.Equal(t, "order_closed", c.Str("error"), "order %d: %s", i, c.Raw)
				assert.EqualValues(t, "expired", got.Status, "order %d", i)
				assert.NotEqual(t, http.StatusOK, pays[i], "order %d: an order paid is cancelled, never expired", i)
			default:
				t.Errorf("order %d: cancel answered %d %s", i, c.Status, c.Raw)
			}
		}
		t.Logf("%d cancelled (%d owing a refund), %d expired", cancelled, refunds, expired)

		rep := s.drained(sku)
		assert.True(t, rep.Consistent, "%+v", rep)
		assert.Equal(t, cancelled, rep.Cancelled)
		assert.Equal(t, expired, rep.Expired)
		assert.Zero(t, rep.Paid)
		assert.Zero(t, rep.Sold)
		assert.Equal(t, int64(n), *rep.RedisLeft, "every unit back once")
		due := s.supportList(0, client.AdminListOrdersParams{SkuId: ptr(int64(sku)), Status: ptr("cancelled"), Limit: ptr(100)})
		var owed int64
		for _, o := range due {
			if o.Refund == "due" {
				owed++
			}
		}
		assert.Equal(t, refunds, owed)

		// The units sell again, each once.
		for i := range n {
			wg.Go(func() {
				r, _ := s.buyRetrying(i, sku, fmt.Sprintf("again%d", i), 1)
				assert.Equal(t, http.StatusAccepted, r.Status, r.Raw)
			})
		}
		wg.Wait()
		extra := s.buy(0, sku, "one-too-many", 1)
		rep = s.drained(sku)
		assert.True(t, rep.Consistent, "%+v", rep)
		// Sold, or expired since: the payment window is a second, which a
		// slow backend's drain and audit can outlast, and a unit back from
		// such an expiry sells once more.
		resold := int64(n)
		if extra.Status == http.StatusAccepted {
			assert.Greater(t, rep.Expired, expired, "one too many accepted with no unit back: %+v", rep)
			resold++
		} else {
			assert.Equal(t, "sold_out", extra.Str("error"), extra.Raw)
		}
		assert.Equal(t, resold, rep.Sold+rep.Expired-expired, "%+v", rep)
	})
}

// TestSupportListsAreServedByIndexes: on MariaDB and TiDB, every query GET
// /admin/orders makes of the orders table, for each filter alone and
// combined, with and without a cursor, reads an index in the list's order:
// no full scan, no sort of the matching rows.
func TestSupportListsAreServedByIndexes(t *testing.T) {
	// No workers: nothing but the requests below queries the database while
	// the callback that captures them is registered and removed.
	s := startSale(t, saleOpts{noWorkers: true})
	skus := []uint64{s.seed(10, 1), s.seed(10, 1), s.seed(10, 1)}
	db := s.apps[0].DB
	statuses := []string{"pending_payment", "paid", "cancelled", "expired", "failed"}
	base := time.Now().UTC().Add(-time.Hour)
	const rows = 6000
	var values []string
	var args []any
	for i := range rows {
		at := base.Add(time.Duration(i) * 10 * time.Millisecond)
		values = append(values, "(?, ?, ?, 1, 100, ?, ?, ?, ?, ?)")
		args = append(args, fmt.Sprintf("%d-%024d", skus[i%3], i), skus[i%3], fmt.Sprintf("user%d", i%500),
			statuses[i%len(statuses)], at, at, at.Add(15*time.Minute), at)
		if len(values) == 500 || i == rows-1 {
			require.NoError(t, db.Exec(`INSERT INTO orders (order_id, sku_id, user_id, qty, price_cents, status,
				created_at, persisted_at, expires_at, updated_at) VALUES `+strings.Join(values, ", "), args...).Error)
			values, args = nil, nil
		}
	}
	require.NoError(t, db.Exec("ANALYZE TABLE orders").Error)

	type captured struct {
		sql  string
		vars []any
	}
	var mu sync.Mutex
	var seen []captured
	require.NoError(t, db.Callback().Query().After("gorm:query").Register("test:capture", func(tx *gorm.DB) {
		q := tx.Statement.SQL.String()
		if strings.Contains(q, "`orders`") && strings.Contains(q, "ORDER BY") {
			mu.Lock()
			seen = append(seen, captured{q, slices.Clone(tx.Statement.Vars)})
			mu.Unlock()
		}
	}))
	t.Cleanup(func() { _ = db.Callback().Query().Remove("test:capture") })

	for _, sku := range []string{"", fmt.Sprint(skus[1])} {
		for _, user := range []string{"", "user7"} {
			for _, status := range []string{"", "paid", "pending_payment,cancelled,failed"} {
				q := url.Values{"limit": {"25"}}
				if sku != "" {
					q.Set("sku_id", sku)
				}
				if user != "" {
					q.Set("user_id", user)
				}
				if status != "" {
					q.Set("status", status)
				}
				r := s.do(0, "GET", "/admin/orders?"+q.Encode(), "", nil)
				require.Equal(t, http.StatusOK, r.Status, r.Raw)
				if next := r.Str("next_cursor"); next != "" {
					q.Set("cursor", next)
					r = s.do(0, "GET", "/admin/orders?"+q.Encode(), "", nil)
					require.Equal(t, http.StatusOK, r.Status, r.Raw)
				}
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, seen)
	raw := db.Session(&gorm.Session{NewDB: true})
	used := map[string]bool{} // the indexes the lists read
	for _, c := range seen {
		var plan []map[string]any
		require.NoError(t, raw.Raw("EXPLAIN "+c.sql, c.vars...).Scan(&plan).Error, c.sql)
		for _, step := range plan {
			for _, k := range strings.Split(text(step["key"]), ",") {
				used[k] = true
			}
			if _, after, ok := strings.Cut(text(step["access object"]), "index:"); ok {
				used[strings.SplitN(after, "(", 2)[0]] = true
			}
			if _, tidb := step["operator info"]; tidb {
				// TiDB's plan is a tree of operators, one a row: a sort
				// is a Sort or TopN, a scan of the whole table a
				// TableFullScan that does not read the rows in order.
				op, info := text(step["id"]), text(step["operator info"])
				assert.False(t, strings.Contains(op, "Sort") || strings.Contains(op, "TopN"), "%s: sorts the rows: %v", c.sql, step)
				assert.False(t, strings.Contains(op, "TableFullScan") && !strings.Contains(info, "keep order:true"),
					"%s: no index: %v", c.sql, step)
				continue
			}
			key, extra := text(step["key"]), text(step["Extra"])
			assert.NotEmpty(t, key, "%s: no index: %v", c.sql, step)
			assert.NotContains(t, extra, "filesort", "%s: sorts the rows: %v", c.sql, step)
		}
	}
	// Every index the drain pays for on each insert serves a list, or is
	// the key an order is read and written by.
	var indexes []string
	require.NoError(t, raw.Raw("SELECT DISTINCT index_name FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = 'orders'").
		Scan(&indexes).Error)
	require.NotEmpty(t, indexes)
	for _, idx := range indexes {
		if idx != "PRIMARY" && idx != "orders_order_id" {
			assert.True(t, used[idx], "index %s of orders serves none of the lists, and every insert pays for it (used: %v)", idx, used)
		}
	}
}

// text is a column EXPLAIN returned, as a string ("" for NULL).
func text(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	}
	return ""
}
