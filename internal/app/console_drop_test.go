package app

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/room"
	"github.com/seckill/seckill/internal/testutil"
)

// The console makes a drop in a real browser: its form lists the SKUs
// that can be sizes of one, shows the API's refusal in its words, then
// creates the drop of the SKUs picked; the drop's page shows its SKUs and
// the units left of each, and steers the drop's room without offering to
// open it; the sales list and a size's sale page link to the drop.
func TestConsoleMakesADropInABrowser(t *testing.T) {
	testutil.SkipShort(t, "drives a browser against a server on Redis and MariaDB")
	s := startSale(t, saleOpts{env: map[string]string{"SECKILL_ROOM_PASS_KEYS": roomKey}})
	sizes := s.seedSizes(time.Now().UTC().Add(time.Hour), 1, 3, 4, 5)
	withRoom := s.seedRoom(3, 30*time.Minute, map[string]any{})
	base := s.urls[0]
	b := newTab(t)
	b.do(chromedp.EmulateViewport(1280, 800), chromedp.Navigate(base+"/console/login"))
	b.do(chromedp.SendKeys(chromedp.ID("token"), adminToken), chromedp.Click(chromedp.ID("login")))
	b.until("the sales page", `location.pathname === "/console"`)

	b.do(chromedp.Navigate(base + "/console/drops/new"))
	pick := func(id uint64) string { return fmt.Sprintf("#pick-%d", id) }
	for _, id := range sizes {
		b.until("the size in the list", fmt.Sprintf(`document.querySelector(%s)`, js(pick(id))))
	}
	assert.False(t, eval[bool](b, fmt.Sprintf(`!!document.querySelector(%s)`, js(pick(withRoom)))), "a SKU with a room of its own is not listed")
	b.fits("the drop form")
	b.do(chromedp.SendKeys(chromedp.ID("d-name"), "Runner 2"), chromedp.SendKeys(chromedp.ID("d-limit"), "1"),
		chromedp.Click(chromedp.CSS(pick(sizes[0]))), chromedp.Click(chromedp.CSS(pick(sizes[1]))),
		chromedp.SendKeys(chromedp.ID("f-room-rate"), "10"))
	b.do(chromedp.Click(chromedp.ID("drop-submit")))
	b.contains("#drop-result", "400 · invalid_request: ")
	b.contains("#drop-result", "waiting_room needs opens_at")

	// A minute ago in the browser's time zone, as the field takes it.
	eval[string](b, `(() => {
		const d = new Date(Date.now() - 60000), p = (n) => String(n).padStart(2, "0");
		return document.querySelector("#f-room-opens").value =
			d.getFullYear() + "-" + p(d.getMonth() + 1) + "-" + p(d.getDate()) + "T" + p(d.getHours()) + ":" + p(d.getMinutes()) + ":" + p(d.getSeconds());
	})()`)
	b.do(chromedp.Click(chromedp.ID("drop-submit")))
	drop := sizes[0]
	b.contains("#drop-result", fmt.Sprintf("201 · created: drop #%d, Runner 2", drop))
	b.contains("#drop-made", "4 left")
	b.until("the sizes gone from the list", fmt.Sprintf(`!document.querySelector(%s) && !!document.querySelector("#drop-skus tbody td")`, js(pick(sizes[0]))))
	v := s.do(0, "GET", fmt.Sprintf("/api/v1/drops/%d", drop), "", nil)
	require.Equal(t, http.StatusOK, v.Status, v.Raw)
	assert.EqualValues(t, 7, v.Num("stock_left"), v.Raw)
	assert.EqualValues(t, 10, v.Body["waiting_room"].(map[string]any)["admit_per_second"], v.Raw)

	b.do(chromedp.Click(chromedp.ID("see-drop")))
	b.until("the drop's page", fmt.Sprintf(`location.pathname === "/console/drops/%d"`, drop))
	b.shows("#drop-name", "Runner 2")
	b.shows("#drop-left", "7")
	b.shows(fmt.Sprintf(`#drop-skus tr[data-sku="%d"] [data-field="left"]`, sizes[1]), "4")
	b.shows("#room-state", room.Running)
	assert.False(t, eval[bool](b, `!!document.querySelector("#room-open")`), "a drop's room is never opened")
	b.fits("the drop's page")

	b.confirm("#room-pause")
	b.contains("#action-result", "200 · room paused")
	b.shows("#room-state", room.Paused)
	ctl := s.do(0, "GET", fmt.Sprintf("/admin/drops/%d/room", drop), "", nil)
	require.Equal(t, http.StatusOK, ctl.Status, ctl.Raw)
	assert.Equal(t, room.Paused, ctl.Str("state"), ctl.Raw)

	b.do(chromedp.SendKeys(chromedp.ID("room-codes-count"), "2"))
	b.confirm("#room-make-codes")
	b.contains("#action-result", "201 · 2 codes made")
	b.shows("#room-codes-total", "2")

	b.do(chromedp.Navigate(base + "/console"))
	tag := fmt.Sprintf(`#sales tr[data-sku="%d"] .drop-tag`, sizes[1])
	b.until("the size's drop in the list", fmt.Sprintf(`(e => e && !e.hidden && e.textContent === "drop #%d" && e.getAttribute("href") === "/console/drops/%d")(document.querySelector(%s))`,
		drop, drop, js(tag)))
	assert.True(t, eval[bool](b, fmt.Sprintf(`document.querySelector(%s).hidden`, js(fmt.Sprintf(`#sales tr[data-sku="%d"] .drop-tag`, sizes[2])))),
		"a SKU of no drop names none")
	b.do(chromedp.Navigate(fmt.Sprintf("%s/console/skus/%d", base, sizes[1])))
	b.contains("#sku-drop", fmt.Sprintf("drop #%d", drop))
	b.do(chromedp.Click(chromedp.CSS("#sku-drop a")))
	b.until("the drop's page", fmt.Sprintf(`location.pathname === "/console/drops/%d"`, drop))
	b.shows("#room-state", room.Paused)

	b.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulatePortrait))
	b.do(chromedp.Navigate(fmt.Sprintf("%s/console/drops/%d", base, drop)))
	b.shows("#room-state", room.Paused)
	b.fits("the drop's page at 390 px")
	b.do(chromedp.Navigate(base + "/console/drops/new"))
	b.until("the list", `!!document.querySelector("#drop-skus tbody td")`)
	b.fits("the drop form at 390 px")
}
