package app

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/room"
	"github.com/seckill/seckill/internal/testutil"
)

const roomKey = "app-test-room-pass-key-0123456789abcdef"

// seedRoom creates a SKU of units with a waiting room that opens now; the
// sale starts after wait and lasts an hour.
func (s *deployment) seedRoom(units int64, wait time.Duration, room map[string]any) uint64 {
	s.t.Helper()
	now := time.Now().UTC()
	room["opens_at"] = now.Add(-time.Second)
	r := s.do(0, "POST", "/admin/skus", "", map[string]any{"name": "Sneaker", "price_cents": 12000, "stock": units,
		"per_user_limit": 1, "starts_at": now.Add(wait), "ends_at": now.Add(time.Hour), "waiting_room": room})
	require.Equal(s.t, http.StatusCreated, r.Status, r.Raw)
	return uint64(r.Num("id"))
}

// A flash sale through the waiting room, on two instances: every shopper
// joins before the start, is drawn, waits, is admitted at the room's rate
// and buys with their pass. Exactly the stock is sold, one order per
// shopper; no pass buys twice or for someone else; nobody holds two
// tickets; and the published draw recomputes to the places the shoppers
// were given.
func TestWaitingRoomSale(t *testing.T) {
	s := startSale(t, saleOpts{instances: 2, env: map[string]string{"SECKILL_ROOM_PASS_KEYS": roomKey}})
	const units, shoppers = 10, 40
	sku := s.seedRoom(units, 3*time.Second, map[string]any{"mode": "random", "admit_per_second": 4, "pass_ttl": "5s", "overbook": 1})
	queue := fmt.Sprintf("/api/v1/skus/%d/queue", sku)

	v := s.do(0, "GET", fmt.Sprintf("/api/v1/skus/%d", sku), "", nil)
	require.Equal(t, http.StatusOK, v.Status, v.Raw)
	wr, _ := v.Body["waiting_room"].(map[string]any)
	require.NotNil(t, wr, v.Raw)
	commit, _ := wr["seed_sha256"].(string)
	assert.Len(t, commit, 64, "the seed's hash is published from the opening")
	assert.Nil(t, wr["seed"], "the seed is not, before the start")
	assert.Equal(t, "5s", wr["pass_ttl"])

	r := s.do(0, "GET", queue, "nobody", nil)
	assert.Equal(t, http.StatusNotFound, r.Status, r.Raw)
	assert.Equal(t, "no_ticket", r.Str("error"))

	tickets := make([]string, shoppers)
	for i := range shoppers {
		user := fmt.Sprintf("s%02d", i)
		r := s.do(i, "POST", queue, user, nil)
		require.Equal(t, http.StatusOK, r.Status, r.Raw)
		assert.Equal(t, room.Waiting, r.Str("status"))
		assert.NotEmpty(t, r.Header.Get("Retry-After"))
		tickets[i] = r.Str("ticket")
		again := s.do(i+1, "POST", queue, user, nil)
		assert.Equal(t, tickets[i], again.Str("ticket"), "one ticket per shopper, on any instance")
	}

	type outcome struct {
		position int64
		order    string
		final    string
	}
	out := make([]outcome, shoppers)
	var first sync.Once
	var reuses sync.Map // answer to a second buy with a spent pass -> count
	var wg sync.WaitGroup
	for i := range shoppers {
		wg.Go(func() {
			user := fmt.Sprintf("s%02d", i)
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
				if p := r.Num("position"); p > 0 {
					out[i].position = p
				}
				switch r.Str("status") {
				case room.Admitted:
					pass := r.Str("pass")
					// While units remain: a buy needs a pass, and the
					// shopper's own.
					first.Do(func() {
						for _, b := range []map[string]any{{"sku_id": sku, "qty": 1}, {"sku_id": sku, "qty": 1, "pass": pass},
							{"sku_id": sku, "qty": 1, "pass": "p1.1.t.9999999999999.abcd.xyz"}} {
							r := s.do(i, "POST", "/api/v1/orders", "x"+user, b)
							assert.Equal(t, http.StatusForbidden, r.Status, r.Raw)
							want := "pass_invalid"
							if b["pass"] == nil {
								want = "pass_required"
							}
							assert.Equal(t, want, r.Str("error"), r.Raw)
						}
					})
					rid := "buy-" + user
					b := s.do(i+1, "POST", "/api/v1/orders", user, map[string]any{"sku_id": sku, "qty": 1, "request_id": rid, "pass": pass})
					for b.Status == http.StatusServiceUnavailable && time.Now().Before(deadline) {
						// busy or unavailable: the same request again, as a
						// client would (the request id keeps it one order).
						time.Sleep(100 * time.Millisecond)
						b = s.do(i+1, "POST", "/api/v1/orders", user, map[string]any{"sku_id": sku, "qty": 1, "request_id": rid, "pass": pass})
					}
					switch b.Status {
					case http.StatusAccepted:
						out[i].order = b.Str("order_id")
						again := s.do(i, "POST", "/api/v1/orders", user, map[string]any{"sku_id": sku, "qty": 1, "request_id": rid, "pass": pass})
						assert.Equal(t, out[i].order, again.Str("order_id"), "a retry gets its order: %s", again.Raw)
						// A spent pass buys nothing: pass_invalid, or
						// sold_out once the units are gone.
						reuse := s.do(i, "POST", "/api/v1/orders", user, map[string]any{"sku_id": sku, "qty": 1, "request_id": rid + "-2", "pass": pass})
						for reuse.Status == http.StatusServiceUnavailable && time.Now().Before(deadline) {
							time.Sleep(100 * time.Millisecond)
							reuse = s.do(i, "POST", "/api/v1/orders", user, map[string]any{"sku_id": sku, "qty": 1, "request_id": rid + "-2", "pass": pass})
						}
						n, _ := reuses.LoadOrStore(fmt.Sprint(reuse.Status, " ", reuse.Str("error")), new(atomic.Int64))
						n.(*atomic.Int64).Add(1)
						out[i].final = "bought"
						return
					case http.StatusConflict:
						out[i].final = b.Str("error") // sold_out: passes are overbooked by nothing here, so rare
						return
					default:
						t.Errorf("%s buys with a pass: %s", user, b.Raw)
						return
					}
				case room.SoldOut, room.Closed:
					out[i].final = r.Str("status")
					return
				}
				wait, _ := strconv.Atoi(r.Header.Get("Retry-After"))
				time.Sleep(min(time.Duration(wait)*time.Second, 150*time.Millisecond))
			}
			t.Errorf("%s: no outcome in time", user)
		})
	}
	wg.Wait()

	bought := 0
	for i, o := range out {
		if o.order != "" {
			bought++
		}
		assert.NotZero(t, o.position, "shopper %d was given a place", i)
	}
	assert.Equal(t, units, bought, "exactly the stock sold: %+v", out)

	reuses.Range(func(k, _ any) bool {
		assert.Contains(t, []string{"403 pass_invalid", "409 sold_out"}, k, "a spent pass")
		return true
	})

	rep := s.drained(sku)
	assert.True(t, rep.Consistent, "%+v", rep)
	var perUser []int64
	require.NoError(t, s.apps[0].DB.Raw("SELECT COUNT(*) FROM orders WHERE sku_id = ? GROUP BY user_id", sku).Scan(&perUser).Error)
	assert.Len(t, perUser, units)
	for _, n := range perUser {
		assert.EqualValues(t, 1, n)
	}

	// The draw, published once the sale ends, recomputes to the places.
	d := s.do(0, "GET", fmt.Sprintf("/api/v1/skus/%d/draw", sku), "", nil)
	assert.Equal(t, http.StatusConflict, d.Status, d.Raw)
	assert.Equal(t, "draw_not_published", d.Str("error"))
	require.Equal(t, http.StatusOK, s.do(0, "POST", fmt.Sprintf("/admin/skus/%d/end", sku), "", nil).Status)
	require.Eventually(t, func() bool {
		d = s.do(0, "GET", fmt.Sprintf("/api/v1/skus/%d/draw", sku), "", nil)
		return d.Status == http.StatusOK
	}, 10*time.Second, 100*time.Millisecond, d.Raw)
	seed := d.Str("seed")
	sum := sha256.Sum256([]byte(seed))
	assert.Equal(t, commit, hex.EncodeToString(sum[:]), "the seed is the one committed to")
	var pre []string
	for _, x := range d.Body["pre_queue"].([]any) {
		pre = append(pre, x.(string))
	}
	assert.ElementsMatch(t, tickets, pre, "pseudonymous tickets, no shopper ids")
	place := map[string]int64{}
	for i, ticket := range tickets {
		place[ticket] = out[i].position
	}
	for i, ticket := range room.Drawn(seed, pre) {
		assert.EqualValues(t, i+1, place[ticket], "ticket %s", ticket)
	}
}

// A pass is spent by the buy it lets in: a second buy with it is refused
// as pass_invalid while units remain, on any instance, and writes nothing.
func TestASpentPassBuysNothingMore(t *testing.T) {
	s := startSale(t, saleOpts{instances: 2, env: map[string]string{"SECKILL_ROOM_PASS_KEYS": roomKey}})
	sku := s.seedRoom(3, 0, map[string]any{"admit_per_second": 10, "pass_ttl": "30s"})
	queue := fmt.Sprintf("/api/v1/skus/%d/queue", sku)
	var r testutil.Reply
	require.Eventually(t, func() bool {
		r = s.do(0, "POST", queue, "alice", nil)
		return r.Status == http.StatusOK && r.Str("status") == room.Admitted
	}, 15*time.Second, 100*time.Millisecond, "alice is admitted: %s", r.Raw)
	pass := r.Str("pass")
	var b testutil.Reply
	require.Eventually(t, func() bool { // 503 busy is retried with the same request id
		b = s.do(0, "POST", "/api/v1/orders", "alice", map[string]any{"sku_id": sku, "qty": 1, "request_id": "a-1", "pass": pass})
		return b.Status != http.StatusServiceUnavailable
	}, 15*time.Second, 100*time.Millisecond)
	require.Equal(t, http.StatusAccepted, b.Status, b.Raw)
	for i := range 2 {
		again := s.do(i, "POST", "/api/v1/orders", "alice", map[string]any{"sku_id": sku, "qty": 1, "request_id": fmt.Sprint("a-2-", i), "pass": pass})
		assert.Equal(t, http.StatusForbidden, again.Status, again.Raw)
		assert.Equal(t, "pass_invalid", again.Str("error"), again.Raw)
	}
	rep := s.drained(sku)
	assert.True(t, rep.Consistent, "%+v", rep)
	var orders int64
	require.NoError(t, s.apps[0].DB.Raw("SELECT COUNT(*) FROM orders WHERE sku_id = ?", sku).Scan(&orders).Error)
	assert.EqualValues(t, 1, orders, "the spent pass wrote nothing")
}

// A waiting room is refused on bad settings, given at creation only.
func TestWaitingRoomBadSettings(t *testing.T) {
	s := startSale(t, saleOpts{env: map[string]string{"SECKILL_ROOM_PASS_KEYS": roomKey}})
	now := time.Now().UTC()
	for name, wr := range map[string]any{
		"no opens_at":             map[string]any{"mode": "random"},
		"opens after start":       map[string]any{"opens_at": now.Add(2 * time.Hour)},
		"unknown mode":            map[string]any{"opens_at": now, "mode": "lottery"},
		"negative rate":           map[string]any{"opens_at": now, "admit_per_second": -1},
		"pass_ttl too short":      map[string]any{"opens_at": now, "pass_ttl": "1s"},
		"pass_ttl not a duration": map[string]any{"opens_at": now, "pass_ttl": 60},
		"overbook below 1":        map[string]any{"opens_at": now, "overbook": 0.5},
		"unknown field":           map[string]any{"opens_at": now, "seed": "mine"},
		"not an object":           "yes",
	} {
		r := s.do(0, "POST", "/admin/skus", "", map[string]any{"name": "x", "price_cents": 1, "stock": 1, "per_user_limit": 1,
			"starts_at": now.Add(time.Hour), "ends_at": now.Add(2 * time.Hour), "waiting_room": wr})
		assert.Equal(t, http.StatusBadRequest, r.Status, "%s: %s", name, r.Raw)
		assert.Equal(t, "invalid_request", r.Str("error"), name)
	}
	r := s.do(0, "POST", "/admin/skus", "", map[string]any{"name": "x", "price_cents": 1, "stock": 1, "per_user_limit": 1, "buckets": 3,
		"starts_at": now.Add(time.Hour), "ends_at": now.Add(2 * time.Hour), "waiting_room": map[string]any{"opens_at": now}})
	assert.Equal(t, http.StatusBadRequest, r.Status, r.Raw)
	assert.Equal(t, 0, int(s.skuCount()), "nothing written")

	sku := s.seed(5, 1)
	r = s.do(0, "PATCH", fmt.Sprintf("/admin/skus/%d", sku), "", map[string]any{"waiting_room": map[string]any{"opens_at": now}})
	assert.Equal(t, http.StatusBadRequest, r.Status, r.Raw)
	r = s.do(0, "POST", fmt.Sprintf("/api/v1/skus/%d/queue", sku), "alice", nil)
	assert.Equal(t, http.StatusNotFound, r.Status, r.Raw)
	assert.Equal(t, "no_waiting_room", r.Str("error"))
	r = s.do(0, "POST", "/api/v1/skus/0/queue", "alice", nil)
	assert.Equal(t, http.StatusBadRequest, r.Status, r.Raw)
	r = s.do(0, "POST", "/api/v1/skus/99999999/queue", "alice", nil)
	assert.Equal(t, http.StatusNotFound, r.Status, r.Raw)
	assert.Equal(t, "unknown_sku", r.Str("error"))
	r = s.do(0, "POST", "/api/v1/orders", "alice", map[string]any{"sku_id": sku, "qty": 1, "pass": string(make([]byte, 300))})
	assert.Equal(t, http.StatusBadRequest, r.Status, r.Raw)
}

// Giving a SKU its own room again changes nothing (docs/shop/waiting-room.md#settings), also with an
// opens_at finer than the milliseconds MySQL keeps.
func TestTheSameRoomAgainWithAnOpensAtFinerThanMySQLs(t *testing.T) {
	s := startSale(t, saleOpts{})
	now := time.Now().UTC().Truncate(time.Second)
	body := skuBody(map[string]any{"id": 9301,
		"starts_at": now.Add(time.Hour), "ends_at": now.Add(2 * time.Hour),
		"waiting_room": map[string]any{"opens_at": now.Add(30*time.Minute + 1234*time.Microsecond)}})
	r := s.do(0, "POST", "/admin/skus", "", body)
	require.Equal(t, http.StatusCreated, r.Status, r.Raw)
	r = s.do(0, "POST", "/admin/skus", "", body)
	assert.Equal(t, http.StatusOK, r.Status, "the same body again: %s", r.Raw)
}

// A room whose SKU's stock state Redis lost is rebuilt from SQL once a
// visit finds it missing: no buy can reach Redis to start the rebuild, as
// a shopper needs a pass for that, and no pass is issued meanwhile.
func TestARoomWhoseStockStateWasLostIsRebuilt(t *testing.T) {
	s := startSale(t, saleOpts{env: map[string]string{"SECKILL_ROOM_PASS_KEYS": roomKey}})
	sku := s.seedRoom(5, 2*time.Second, map[string]any{"admit_per_second": 10, "pass_ttl": "5s", "overbook": 1})
	queue := fmt.Sprintf("/api/v1/skus/%d/queue", sku)
	require.Equal(t, http.StatusOK, s.do(0, "POST", queue, "alice", nil).Status)

	ctx := t.Context()
	rdb := s.apps[0].Redis
	keys, err := rdb.Keys(ctx, fmt.Sprintf("%s{sku:%d}*", s.env["SECKILL_REDIS_KEY_PREFIX"], sku)).Result()
	require.NoError(t, err)
	require.NoError(t, rdb.Del(ctx, keys...).Err())
	time.Sleep(2 * time.Second) // past starts_at

	var last testutil.Reply
	require.Eventually(t, func() bool {
		last = s.do(0, "POST", queue, "carol", nil)
		return last.Status == http.StatusOK
	}, 15*time.Second, 200*time.Millisecond, "joins after the loss")
	assert.True(t, s.audit(sku).Consistent)
}

// A sale ended before its room opened is over: the room answers that, not
// that it opens later.
func TestARoomOfASaleEndedBeforeItOpenedIsClosed(t *testing.T) {
	s := startSale(t, saleOpts{env: map[string]string{"SECKILL_ROOM_PASS_KEYS": roomKey}})
	now := time.Now().UTC()
	r := s.do(0, "POST", "/admin/skus", "", map[string]any{"name": "Sneaker", "price_cents": 12000, "stock": 5,
		"per_user_limit": 1, "starts_at": now.Add(2 * time.Hour), "ends_at": now.Add(3 * time.Hour),
		"waiting_room": map[string]any{"opens_at": now.Add(time.Hour)}})
	require.Equal(t, http.StatusCreated, r.Status, r.Raw)
	sku := uint64(r.Num("id"))
	queue := fmt.Sprintf("/api/v1/skus/%d/queue", sku)
	assert.Equal(t, "room_not_open", s.do(0, "POST", queue, "alice", nil).Str("error"))

	require.Equal(t, http.StatusOK, s.do(0, "POST", fmt.Sprintf("/admin/skus/%d/end", sku), "", nil).Status)
	for _, method := range []string{"POST", "GET"} {
		got := s.do(0, method, queue, "alice", nil)
		require.Equal(t, http.StatusOK, got.Status, got.Raw)
		assert.Equal(t, room.Closed, got.Str("status"), got.Raw)
		assert.Equal(t, "sale_ended", got.Str("reason"), got.Raw)
	}
}

// The draw of a random room nobody joined before the start publishes an
// empty pre-queue as an empty list, as api/openapi.yaml describes it, and
// the tickets of those who joined after it in later.
func TestTheDrawOfARoomNobodyJoinedBeforeTheStart(t *testing.T) {
	s := startSale(t, saleOpts{env: map[string]string{"SECKILL_ROOM_PASS_KEYS": roomKey}})
	sku := s.seedRoom(5, time.Second, map[string]any{"mode": "random", "admit_per_second": 10})
	// The seed is shown from starts_at on: from then, a join is a later one.
	require.Eventually(t, func() bool {
		wr, _ := s.do(0, "GET", fmt.Sprintf("/api/v1/skus/%d", sku), "", nil).Body["waiting_room"].(map[string]any)
		return wr["seed"] != nil
	}, 10*time.Second, 100*time.Millisecond, "the sale starts")
	queue := fmt.Sprintf("/api/v1/skus/%d/queue", sku)
	var r testutil.Reply
	require.Eventually(t, func() bool {
		r = s.do(0, "POST", queue, "alice", nil)
		return r.Status == http.StatusOK // 503 busy while the draw is made
	}, 10*time.Second, 100*time.Millisecond, "alice joins after the start: %s", r.Raw)
	assert.EqualValues(t, 1, r.Num("position"), r.Raw)
	require.Equal(t, http.StatusOK, s.do(0, "POST", fmt.Sprintf("/admin/skus/%d/end", sku), "", nil).Status)

	d := s.do(0, "GET", fmt.Sprintf("/api/v1/skus/%d/draw", sku), "", nil)
	require.Equal(t, http.StatusOK, d.Status, d.Raw)
	assert.Equal(t, []any{}, d.Body["pre_queue"], d.Raw)
	assert.Equal(t, []any{r.Str("ticket")}, d.Body["later"], d.Raw)
}

// After Redis loses a room SKU's state mid-sale, the admissions made
// before the loss cannot be checked: the audit says so, counts the buyers
// concerned, and finds the sale consistent; the buyers admitted since are
// checked.
func TestTheAuditOfARoomWhoseStateWasLost(t *testing.T) {
	s := startSale(t, saleOpts{env: map[string]string{"SECKILL_ROOM_PASS_KEYS": roomKey}})
	sku := s.seedRoom(5, time.Second, map[string]any{"mode": "fifo", "admit_per_second": 50, "pass_ttl": "30s", "overbook": 1})
	queue := fmt.Sprintf("/api/v1/skus/%d/queue", sku)
	// buy joins as user, waits for admission and buys with the pass,
	// retrying what answers 503 (a draw, a state being restored).
	buy := func(user string) {
		t.Helper()
		var r testutil.Reply
		require.Eventually(t, func() bool {
			r = s.do(0, "POST", queue, user, nil)
			return r.Status == http.StatusOK
		}, 15*time.Second, 100*time.Millisecond, "%s joins: %s", user, r.Raw)
		require.Eventually(t, func() bool {
			r = s.do(0, "GET", queue, user, nil)
			return r.Str("status") == room.Admitted
		}, 15*time.Second, 100*time.Millisecond, "%s is admitted: %s", user, r.Raw)
		b := s.do(0, "POST", "/api/v1/orders", user, map[string]any{"sku_id": sku, "qty": 1, "pass": r.Str("pass")})
		require.Equal(t, http.StatusAccepted, b.Status, b.Raw)
	}
	buy("alice")
	buy("bob")
	s.drained(sku)

	ctx := t.Context()
	rdb := s.apps[0].Redis
	keys, err := rdb.Keys(ctx, fmt.Sprintf("%s{sku:%d}*", s.env["SECKILL_REDIS_KEY_PREFIX"], sku)).Result()
	require.NoError(t, err)
	require.NoError(t, rdb.Del(ctx, keys...).Err())
	buy("carol")

	var a testutil.Reply
	require.Eventually(t, func() bool {
		a = s.do(0, "GET", fmt.Sprintf("/admin/skus/%d/audit", sku), "", nil)
		return a.Status == http.StatusOK && a.Num("queued_orders") == 0
	}, 30*time.Second, 100*time.Millisecond, a.Raw)
	assert.Equal(t, true, a.Body["consistent"], a.Raw)
	assert.Equal(t, []any{}, a.Body["violations"], a.Raw)
	wr, _ := a.Body["waiting_room"].(map[string]any)
	require.NotNil(t, wr, a.Raw)
	assert.Equal(t, true, wr["state_lost"], a.Raw)
	assert.EqualValues(t, 2, wr["unchecked_buyers"], "alice and bob: %s", a.Raw)
	assert.EqualValues(t, 0, wr["not_admitted_buyers"], a.Raw)
}
