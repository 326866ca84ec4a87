package app

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/room"
	"github.com/seckill/seckill/internal/testutil"
)

// The console's sale page steers the sale's waiting room in a real
// browser: each button asks, then sends its command with the session's
// CSRF token, and the page shows the room's state and every change; a
// command without the token is refused and changes nothing. It makes
// priority codes, shown once, and counts those used.
func TestConsoleSteersARoomInABrowser(t *testing.T) {
	testutil.SkipShort(t, "drives a browser against a server on Redis and MariaDB")
	s := startSale(t, saleOpts{env: map[string]string{"SECKILL_ROOM_PASS_KEYS": roomKey}})
	sku := s.seedRoom(5, time.Minute, map[string]any{"mode": "fifo", "admit_per_second": 10})
	base := s.urls[0]
	b := newTab(t)
	b.do(chromedp.EmulateViewport(1280, 800), chromedp.Navigate(base+"/console/login"))
	b.do(chromedp.SendKeys(chromedp.ID("token"), adminToken), chromedp.Click(chromedp.ID("login")))
	b.until("the sales page", `location.pathname === "/console"`)
	b.do(chromedp.Navigate(fmt.Sprintf("%s/console/skus/%d", base, sku)))
	b.shows("#room-state", room.Running)
	b.contains("#room-changes tbody", "No change yet.")
	b.fits("the sale page with a room")

	b.confirm("#room-pause")
	b.contains("#action-result", "200 · room paused")
	b.shows("#room-state", room.Paused)
	b.contains("#room-changes tbody", "pause")

	b.do(chromedp.SendKeys(chromedp.ID("room-new-rate"), "25"))
	b.confirm("#room-set-rate")
	b.contains("#action-result", "200 · rate set to 25")
	b.shows("#room-rate", "25 per second")

	control := fmt.Sprintf(`/console/api/skus/%d/room`, sku)
	assert.Equal(t, http.StatusForbidden, eval[int](b, fmt.Sprintf(
		`fetch(%s, {method: "POST", headers: {"Content-Type": "application/json"}, body: '{"action":"close"}'}).then(r => r.status)`, js(control))))
	assert.Equal(t, http.StatusForbidden, eval[int](b, fmt.Sprintf(
		`fetch(%s, {method: "POST", headers: {"Content-Type": "application/json", "X-CSRF-Token": "forged"}, body: '{"action":"close"}'}).then(r => r.status)`, js(control))))
	assert.Equal(t, room.Paused, s.do(0, "GET", fmt.Sprintf("/admin/skus/%d/room", sku), "", nil).Str("state"), "refused: nothing written")

	b.shows("#room-codes-total", "0")
	b.do(chromedp.SendKeys(chromedp.ID("room-codes-count"), "3"))
	b.confirm("#room-make-codes")
	b.contains("#action-result", "201 · 3 codes made")
	b.shows("#room-codes-total", "3")
	made := eval[string](b, `document.querySelector("#room-codes-made").value`)
	codes := strings.Split(made, "\n")
	require.Len(t, codes, 3, made)
	req, err := s.caller().Request(base, "POST", fmt.Sprintf("/api/v1/skus/%d/queue", sku), "vip", nil)
	require.NoError(t, err)
	req.Header.Set("Seckill-Priority-Code", codes[0])
	joined, err := s.caller().Send(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, joined.Status, joined.Raw)
	assert.Equal(t, true, joined.Body["priority"], joined.Raw)
	b.do(chromedp.Navigate(fmt.Sprintf("%s/console/skus/%d", base, sku)))
	b.shows("#room-codes-used", "1")
	b.shows("#room-codes-made", "")

	b.confirm("#room-close")
	b.contains("#action-result", "200 · room closed")
	b.shows("#room-state", room.Closed)
	b.confirm("#room-open")
	b.contains("#action-result", "409 · room_closed")
	b.shows("#room-state", room.Closed)

	got := s.do(0, "GET", fmt.Sprintf("/admin/skus/%d/room", sku), "", nil)
	require.Equal(t, http.StatusOK, got.Status, got.Raw)
	changes, _ := got.Body["changes"].([]any)
	require.Len(t, changes, 3, got.Raw)
	assert.Equal(t, 3, eval[int](b, `document.querySelectorAll("#room-changes tbody tr").length`))

	b.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulatePortrait))
	b.do(chromedp.Navigate(fmt.Sprintf("%s/console/skus/%d", base, sku)))
	b.shows("#room-state", room.Closed)
	b.fits("the sale page with a room at 390 px")
}
