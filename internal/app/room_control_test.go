package app

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/room"
	"github.com/seckill/seckill/internal/testutil"
)

// An operator steers a room during the sale, on either of two instances:
// a pause and a resume are recorded, a replay changes nothing, a closed
// room closes its waiting tickets and refuses new ones while the pass it
// gave still buys, nothing changes it any more, and the published draw
// lists every change. Bad commands are refused with nothing written.
func TestOperatorsSteerARoom(t *testing.T) {
	s := startSale(t, saleOpts{instances: 2, env: map[string]string{"SECKILL_ROOM_PASS_KEYS": roomKey}})
	sku := s.seedRoom(5, time.Second, map[string]any{"mode": "fifo", "admit_per_second": 1, "pass_ttl": "30s", "overbook": 1})
	control := fmt.Sprintf("/admin/skus/%d/room", sku)
	queue := fmt.Sprintf("/api/v1/skus/%d/queue", sku)

	for _, bad := range []struct {
		body any
		path string
		code string
	}{
		{`{"action":`, control, "invalid_request"},
		{map[string]any{"action": "pause", "why": "lunch"}, control, "invalid_request"},
		{map[string]any{"action": "stop"}, control, "invalid_request"},
		{map[string]any{"action": "rate"}, control, "invalid_request"},
		{map[string]any{"action": "rate", "admit_per_second": 100_001}, control, "invalid_request"},
		{map[string]any{"action": "rate", "admit_per_second": -1}, control, "invalid_request"},
		{map[string]any{"action": "pause", "admit_per_second": 5}, control, "invalid_request"},
		{map[string]any{"action": "pause"}, "/admin/skus/999999/room", "unknown_sku"},
		{map[string]any{"action": "pause"}, fmt.Sprintf("/admin/skus/%d/room", s.seed(5, 1)), "no_waiting_room"},
	} {
		r := s.do(0, "POST", bad.path, "", bad.body)
		assert.Contains(t, []int{http.StatusBadRequest, http.StatusNotFound}, r.Status, r.Raw)
		assert.Equal(t, bad.code, r.Str("error"), "%v: %s", bad.body, r.Raw)
	}
	got := s.do(1, "GET", control, "", nil)
	require.Equal(t, http.StatusOK, got.Status, got.Raw)
	assert.Equal(t, room.Running, got.Str("state"))
	assert.Equal(t, []any{}, got.Body["changes"], "nothing written")

	require.Equal(t, room.Waiting, s.do(0, "POST", queue, "alice", nil).Str("status"))
	require.Equal(t, room.Waiting, s.do(1, "POST", queue, "bob", nil).Str("status"))

	r := s.do(0, "POST", control, "", map[string]any{"action": "pause"})
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	assert.Equal(t, room.Paused, r.Str("state"))
	again := s.do(1, "POST", control, "", map[string]any{"action": "pause"})
	require.Equal(t, http.StatusOK, again.Status, again.Raw)
	assert.Equal(t, r.Body, again.Body, "a replay changes nothing")
	r = s.do(1, "POST", control, "", map[string]any{"action": "resume"})
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	assert.Equal(t, room.Running, r.Str("state"))

	// Alice is first in line: admitted once the sale starts.
	var alice testutil.Reply
	require.Eventually(t, func() bool {
		alice = s.do(0, "GET", queue, "alice", nil)
		return alice.Str("status") == room.Admitted
	}, 15*time.Second, 100*time.Millisecond, "alice is admitted: %s", alice.Raw)

	r = s.do(1, "POST", control, "", map[string]any{"action": "close"})
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	assert.Equal(t, room.Closed, r.Str("state"))
	for i := range 2 {
		var bob testutil.Reply
		require.Eventually(t, func() bool {
			bob = s.do(i, "GET", queue, "bob", nil)
			return bob.Str("status") == room.Closed
		}, 10*time.Second, 100*time.Millisecond, "bob's ticket is closed on instance %d: %s", i, bob.Raw)
		assert.Equal(t, "room_closed", bob.Str("reason"), bob.Raw)
		carol := s.do(i, "POST", queue, "carol", nil)
		assert.Equal(t, room.Closed, carol.Str("status"), carol.Raw)
		assert.Empty(t, carol.Str("ticket"), "no ticket issued")
	}
	b := s.do(1, "POST", "/api/v1/orders", "alice", map[string]any{"sku_id": sku, "qty": 1, "pass": alice.Str("pass")})
	assert.Equal(t, http.StatusAccepted, b.Status, "a given pass still buys: %s", b.Raw)
	for _, action := range []string{"pause", "resume", "open"} {
		r := s.do(0, "POST", control, "", map[string]any{"action": action})
		assert.Equal(t, http.StatusConflict, r.Status, r.Raw)
		assert.Equal(t, "room_closed", r.Str("error"), r.Raw)
	}

	require.Equal(t, http.StatusOK, s.do(0, "POST", fmt.Sprintf("/admin/skus/%d/end", sku), "", nil).Status)
	d := s.do(0, "GET", fmt.Sprintf("/api/v1/skus/%d/draw", sku), "", nil)
	require.Equal(t, http.StatusOK, d.Status, d.Raw)
	controls, _ := d.Body["controls"].([]any)
	require.Len(t, controls, 3, d.Raw)
	for i, action := range []string{"pause", "resume", "close"} {
		c, _ := controls[i].(map[string]any)
		assert.Equal(t, action, c["action"], d.Raw)
		at, err := time.Parse(time.RFC3339, fmt.Sprint(c["at"]))
		require.NoError(t, err, d.Raw)
		assert.WithinDuration(t, time.Now(), at, time.Minute)
	}
	r = s.do(0, "POST", control, "", map[string]any{"action": "close"})
	assert.Equal(t, http.StatusConflict, r.Status, r.Raw)
	assert.Equal(t, "sale_ended", r.Str("error"), r.Raw)
}

// An open room lets buys without a pass in, on every instance, as for a
// SKU without a room; a resumed one needs passes again.
func TestAnOpenRoomLetsBuysInWithoutAPass(t *testing.T) {
	s := startSale(t, saleOpts{instances: 2, env: map[string]string{"SECKILL_ROOM_PASS_KEYS": roomKey}})
	sku := s.seedRoom(5, -time.Second, map[string]any{"mode": "fifo", "admit_per_second": 1})
	control := fmt.Sprintf("/admin/skus/%d/room", sku)
	buy := func(i int, user string) testutil.Reply {
		return s.do(i, "POST", "/api/v1/orders", user, map[string]any{"sku_id": sku, "qty": 1, "request_id": "r-" + user})
	}
	r := buy(1, "alice")
	assert.Equal(t, http.StatusForbidden, r.Status, r.Raw)
	assert.Equal(t, "pass_required", r.Str("error"), r.Raw)

	r = s.do(0, "POST", control, "", map[string]any{"action": "open"})
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	assert.Equal(t, room.Open, r.Str("state"))
	for i, user := range []string{"alice", "bob"} {
		require.Eventually(t, func() bool {
			r = buy(i, user)
			return r.Status == http.StatusAccepted
		}, 10*time.Second, 100*time.Millisecond, "%s buys without a pass on instance %d: %s", user, i, r.Raw)
	}

	r = s.do(1, "POST", control, "", map[string]any{"action": "resume"})
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	require.Eventually(t, func() bool {
		r = buy(0, "carol")
		return r.Status == http.StatusForbidden && r.Str("error") == "pass_required"
	}, 10*time.Second, 100*time.Millisecond, "a pass is needed again: %s", r.Raw)
	require.Eventually(t, func() bool {
		return buy(1, "dave").Str("error") == "pass_required"
	}, 10*time.Second, 100*time.Millisecond)

	// The audit counts alice and bob apart: they needed no pass.
	a := s.do(0, "GET", fmt.Sprintf("/admin/skus/%d/audit", sku), "", nil)
	require.Equal(t, http.StatusOK, a.Status, a.Raw)
	wr, _ := a.Body["waiting_room"].(map[string]any)
	require.NotNil(t, wr, a.Raw)
	assert.EqualValues(t, 2, wr["open_buyers"], a.Raw)
	assert.EqualValues(t, 0, wr["not_admitted_buyers"], a.Raw)
	assert.Equal(t, false, wr["state_lost"], a.Raw)
}
