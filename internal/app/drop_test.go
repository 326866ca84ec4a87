package app

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/room"
	"github.com/seckill/seckill/internal/testutil"
)

// seedSizes creates a SKU per stock of stocks, all on sale from starts for
// an hour, and returns their ids.
func (s *deployment) seedSizes(starts time.Time, limit int, stocks ...int64) []uint64 {
	s.t.Helper()
	ids := make([]uint64, len(stocks))
	for i, n := range stocks {
		r := s.do(0, "POST", "/admin/skus", "", map[string]any{"name": fmt.Sprintf("Sneaker, size %d", 40+i), "price_cents": 12000,
			"stock": n, "per_user_limit": limit, "starts_at": starts, "ends_at": starts.Add(time.Hour)})
		require.Equal(s.t, http.StatusCreated, r.Status, r.Raw)
		ids[i] = uint64(r.Num("id"))
	}
	return ids
}

// A drop of three sizes sold through its one room, on two instances: every
// shopper joins once, is admitted at the room's rate and buys one size
// with their pass; a shopper whose size is gone tries another with the
// same pass. Exactly the units of all sizes are sold, no shopper buys
// more than the drop's limit over its sizes, and once the last unit is
// gone the waiting shoppers are told sold_out.
func TestADropSoldThroughOneRoom(t *testing.T) {
	s := startSale(t, saleOpts{instances: 2, env: map[string]string{"SECKILL_ROOM_PASS_KEYS": roomKey}})
	now := time.Now().UTC()
	sizes := s.seedSizes(now.Add(3*time.Second), 2, 2, 2, 1)
	body := map[string]any{"name": "Sneaker", "skus": sizes, "per_user_limit": 1,
		"waiting_room": map[string]any{"opens_at": now.Add(-time.Second), "admit_per_second": 5, "pass_ttl": "10s", "overbook": 1}}
	r := s.do(0, "POST", "/admin/drops", "", body)
	require.Equal(t, http.StatusCreated, r.Status, r.Raw)
	drop := uint64(r.Num("id"))
	assert.Equal(t, sizes[0], drop, "a drop's id is its first sku's")
	again := s.do(1, "POST", "/admin/drops", "", body)
	assert.Equal(t, http.StatusOK, again.Status, "the same drop again: %s", again.Raw)

	v := s.do(1, "GET", fmt.Sprintf("/api/v1/drops/%d", drop), "", nil)
	require.Equal(t, http.StatusOK, v.Status, v.Raw)
	assert.EqualValues(t, 5, v.Num("stock_left"), v.Raw)
	assert.Len(t, v.Body["skus"], 3)
	assert.NotNil(t, v.Body["waiting_room"], v.Raw)
	size := s.do(0, "GET", fmt.Sprintf("/api/v1/skus/%d", sizes[1]), "", nil)
	assert.EqualValues(t, drop, size.Num("drop"), size.Raw)
	assert.Nil(t, size.Body["waiting_room"], "a drop's room is shown with the drop: %s", size.Raw)

	ctl := s.do(0, "POST", fmt.Sprintf("/admin/drops/%d/room", drop), "", map[string]any{"action": "open"})
	assert.Equal(t, http.StatusConflict, ctl.Status, ctl.Raw)
	assert.Equal(t, "open_not_for_drops", ctl.Str("error"))

	queue := fmt.Sprintf("/api/v1/drops/%d/queue", drop)
	const shoppers = 12
	for i := range shoppers {
		user := fmt.Sprintf("d%02d", i)
		r := s.do(i, "POST", queue, user, nil)
		require.Equal(t, http.StatusOK, r.Status, r.Raw)
		// One room, whichever of its skus a shopper comes through.
		other := s.do(i+1, "POST", fmt.Sprintf("/api/v1/skus/%d/queue", sizes[i%3]), user, nil)
		assert.Equal(t, r.Str("ticket"), other.Str("ticket"), other.Raw)
	}

	var mu sync.Mutex
	bought := map[string]string{} // shopper -> order id
	finals := map[string]string{}
	var wg sync.WaitGroup
	for i := range shoppers {
		wg.Go(func() {
			user := fmt.Sprintf("d%02d", i)
			deadline := time.Now().Add(60 * time.Second)
			for time.Now().Before(deadline) {
				r := s.do(i, "GET", queue, user, nil)
				if r.Status == http.StatusServiceUnavailable {
					time.Sleep(100 * time.Millisecond)
					continue
				}
				if !assert.Equal(t, http.StatusOK, r.Status, r.Raw) {
					return
				}
				switch r.Str("status") {
				case room.Admitted:
					id, last := s.buySizes(i, user, r.Str("pass"), sizes, deadline)
					mu.Lock()
					defer mu.Unlock()
					if id != "" {
						bought[user] = id
					}
					finals[user] = last.Str("error")
					return
				case room.SoldOut, room.Closed:
					mu.Lock()
					defer mu.Unlock()
					finals[user] = r.Str("status")
					return
				}
				time.Sleep(150 * time.Millisecond)
			}
			t.Errorf("%s: no outcome in time", user)
		})
	}
	wg.Wait()
	assert.Len(t, bought, 5, "exactly the units of every size: %v", finals)

	var perUser []int64
	for _, sku := range sizes {
		rep := s.drained(sku)
		assert.True(t, rep.Consistent, "%+v", rep)
	}
	require.NoError(t, s.apps[0].DB.Raw("SELECT COUNT(*) FROM orders WHERE sku_id IN ? GROUP BY user_id", sizes).Scan(&perUser).Error)
	assert.Len(t, perUser, 5)
	for _, n := range perUser {
		assert.EqualValues(t, 1, n, "one order per shopper over the drop's sizes")
	}
	v = s.do(0, "GET", fmt.Sprintf("/api/v1/drops/%d", drop), "", nil)
	assert.Equal(t, "sold_out", v.Str("state"), v.Raw)
}

// buySizes buys one unit of the drop's sizes with pass, trying the next
// size when one is sold out, and answers the order id, if any, and the
// last answer. A shopper who bought tries the pass once more, on another
// size: refused as spent.
func (s *deployment) buySizes(i int, user, pass string, sizes []uint64, deadline time.Time) (string, testutil.Reply) {
	var b testutil.Reply
	for k := range sizes {
		sku := sizes[(i+k)%len(sizes)]
		body := map[string]any{"sku_id": sku, "qty": 1, "request_id": fmt.Sprintf("%s-%d", user, sku), "pass": pass}
		b = s.do(i, "POST", "/api/v1/orders", user, body)
		for b.Status == http.StatusServiceUnavailable && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
			b = s.do(i, "POST", "/api/v1/orders", user, body)
		}
		switch {
		case b.Status == http.StatusAccepted:
			next := sizes[(i+k+1)%len(sizes)]
			again := s.do(i+1, "POST", "/api/v1/orders", user, map[string]any{"sku_id": next, "qty": 1, "pass": pass})
			assert.Contains(s.t, []string{"pass_invalid", "sold_out"}, again.Str("error"), "a spent pass: %s", again.Raw)
			return b.Str("order_id"), b
		case b.Str("error") == "sold_out":
			continue
		default:
			s.t.Errorf("%s buys size %d: %s", user, sku, b.Raw)
			return "", b
		}
	}
	return "", b
}

// A drop is refused, writing nothing, for what it cannot be: skus unknown,
// in another drop, with a room of their own, of different windows or on
// sale already, and bad fields. A sku of a drop keeps the drop's window.
func TestADropIsRefusedWhatItCannotBe(t *testing.T) {
	s := startSale(t, saleOpts{env: map[string]string{"SECKILL_ROOM_PASS_KEYS": roomKey}})
	now := time.Now().UTC().Truncate(time.Millisecond)
	later := now.Add(time.Hour)
	a := s.seedSizes(later, 1, 3, 3)
	other := s.seedSizes(later.Add(time.Minute), 1, 3)
	live := s.seedSizes(now.Add(-time.Minute), 1, 3)
	withRoom := s.seedRoom(3, 30*time.Minute, map[string]any{})
	room := map[string]any{"opens_at": now}
	for name, c := range map[string]struct {
		body   map[string]any
		status int
		code   string
	}{
		"unknown sku":        {map[string]any{"name": "x", "skus": []uint64{a[0], 99999999}, "per_user_limit": 1, "waiting_room": room}, 404, "unknown_sku"},
		"a room of its own":  {map[string]any{"name": "x", "skus": []uint64{a[0], withRoom}, "per_user_limit": 1, "waiting_room": room}, 409, "sku_has_room"},
		"other windows":      {map[string]any{"name": "x", "skus": []uint64{a[0], other[0]}, "per_user_limit": 1, "waiting_room": room}, 400, "invalid_request"},
		"on sale":            {map[string]any{"name": "x", "skus": live, "per_user_limit": 1, "waiting_room": room}, 409, "sale_started"},
		"no skus":            {map[string]any{"name": "x", "skus": []uint64{}, "per_user_limit": 1, "waiting_room": room}, 400, "invalid_request"},
		"a sku twice":        {map[string]any{"name": "x", "skus": []uint64{a[0], a[0]}, "per_user_limit": 1, "waiting_room": room}, 400, "invalid_request"},
		"sku id 0":           {map[string]any{"name": "x", "skus": []uint64{0}, "per_user_limit": 1, "waiting_room": room}, 400, "invalid_request"},
		"no limit":           {map[string]any{"name": "x", "skus": a, "waiting_room": room}, 400, "invalid_request"},
		"no room":            {map[string]any{"name": "x", "skus": a, "per_user_limit": 1}, 400, "invalid_request"},
		"opens after start":  {map[string]any{"name": "x", "skus": a, "per_user_limit": 1, "waiting_room": map[string]any{"opens_at": later.Add(time.Second)}}, 400, "invalid_request"},
		"no name":            {map[string]any{"skus": a, "per_user_limit": 1, "waiting_room": room}, 400, "invalid_request"},
		"unknown field":      {map[string]any{"name": "x", "skus": a, "per_user_limit": 1, "waiting_room": room, "size": 42}, 400, "invalid_request"},
		"skus not a list":    {map[string]any{"name": "x", "skus": "1,2", "per_user_limit": 1, "waiting_room": room}, 400, "invalid_request"},
		"limit out of range": {map[string]any{"name": "x", "skus": a, "per_user_limit": 100000, "waiting_room": room}, 400, "invalid_request"},
	} {
		r := s.do(0, "POST", "/admin/drops", "", c.body)
		assert.Equal(t, c.status, r.Status, "%s: %s", name, r.Raw)
		assert.Equal(t, c.code, r.Str("error"), "%s: %s", name, r.Raw)
		if c.code == "invalid_request" && name != "unknown field" && name != "skus not a list" {
			assert.Contains(t, r.Str("detail"), "invalid drop: ", "%s: the detail says it is the drop that is refused", name)
		}
	}
	var drops int64
	require.NoError(t, s.apps[0].DB.Raw("SELECT COUNT(*) FROM drops").Scan(&drops).Error)
	assert.Zero(t, drops, "nothing written")

	r := s.do(0, "POST", "/admin/drops", "", map[string]any{"name": "x", "skus": a, "per_user_limit": 1, "waiting_room": room})
	require.Equal(t, http.StatusCreated, r.Status, r.Raw)
	r = s.do(0, "POST", "/admin/drops", "", map[string]any{"name": "y", "skus": a, "per_user_limit": 1, "waiting_room": room})
	assert.Equal(t, http.StatusConflict, r.Status, "other settings: %s", r.Raw)
	assert.Equal(t, "sku_in_drop", r.Str("error"))
	r = s.do(0, "PATCH", fmt.Sprintf("/admin/skus/%d", a[1]), "", map[string]any{"ends_at": later.Add(2 * time.Hour)})
	assert.Equal(t, http.StatusConflict, r.Status, "a size's own window: %s", r.Raw)
	assert.Equal(t, "sku_in_drop", r.Str("error"))
	r = s.do(0, "PATCH", fmt.Sprintf("/admin/skus/%d", a[1]), "", map[string]any{"stock": 5})
	assert.Equal(t, http.StatusOK, r.Status, "its stock may change: %s", r.Raw)

	r = s.do(0, "POST", fmt.Sprintf("/admin/skus/%d/end", a[1]), "", nil)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	r = s.do(0, "GET", fmt.Sprintf("/api/v1/drops/%d", a[0]), "", nil)
	assert.Equal(t, "ended", r.Str("state"), "ending one size ends the drop: %s", r.Raw)

	for _, path := range []string{"/api/v1/drops/%d", "/api/v1/drops/%d/queue"} {
		r = s.do(0, "GET", fmt.Sprintf(path, other[0]), "alice", nil)
		assert.Equal(t, http.StatusNotFound, r.Status, r.Raw)
		assert.Equal(t, "unknown_drop", r.Str("error"), r.Raw)
	}
	r = s.do(0, "GET", "/api/v1/drops/0", "", nil)
	assert.Equal(t, http.StatusBadRequest, r.Status, r.Raw)
}

// A YAML seed file's mapping form makes SKUs and the drops of them: a drop
// refused (a size on sale already) names its line and writes nothing, the
// file fixed is written whole, and sent again it changes nothing.
func TestSeedADrop(t *testing.T) {
	s := startSale(t, saleOpts{env: map[string]string{"SECKILL_ROOM_PASS_KEYS": roomKey}})
	starts := time.Now().UTC().Truncate(time.Second).Add(time.Hour)
	// The room's opening is one instant: the file sent twice must be the
	// same file, whichever second each send starts in.
	opens := time.Now().UTC().Format(time.RFC3339)
	file := func(start time.Time) string {
		return fmt.Sprintf(`skus:
  - {id: 8101, name: Runner 41, price_cents: 12000, stock: 2, per_user_limit: 1, starts_at: %[1]s, ends_at: %[2]s}
  - {id: 8102, name: Runner 42, price_cents: 12000, stock: 3, per_user_limit: 1, starts_at: %[1]s, ends_at: %[2]s}
drops:
  - name: Runner
    skus: [8101, 8102]
    per_user_limit: 1
    waiting_room: {opens_at: %[3]s}
`, start.Format(time.RFC3339), starts.Add(time.Hour).Format(time.RFC3339), opens)
	}
	r := s.seedFile("application/yaml", file(time.Now().UTC().Add(-time.Minute)))
	assert.Equal(t, http.StatusConflict, r.Status, r.Raw)
	assert.Equal(t, "sale_started", r.Str("error"))
	assert.Contains(t, r.Str("detail"), `line 5 (drop "Runner")`)
	assert.Zero(t, s.skuCount(), "nothing written")

	for range 2 {
		r = s.seedFile("application/yaml", file(starts))
		require.Equal(t, http.StatusOK, r.Status, r.Raw)
		drops, _ := r.Body["drops"].([]any)
		require.Len(t, drops, 1, r.Raw)
		assert.EqualValues(t, 8101, drops[0].(map[string]any)["id"])
		assert.EqualValues(t, 5, drops[0].(map[string]any)["stock_left"])
	}
	v := s.do(0, "GET", "/api/v1/drops/8101", "", nil)
	require.Equal(t, http.StatusOK, v.Status, v.Raw)
	assert.Equal(t, "Runner", v.Str("name"))
}
