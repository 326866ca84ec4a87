package app

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testutil"
)

// tab is a page of a headless Chromium that a test drives.
type tab struct {
	t   *testing.T
	ctx context.Context
}

// newTab starts Debian's Chromium, headless with a profile of its own, and
// closes it when the test ends.
func newTab(t *testing.T) *tab {
	t.Helper()
	return &tab{t: t, ctx: testsvc.Browser(t)}
}

// do runs steps, each within a minute.
func (b *tab) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	require.NoError(b.t, chromedp.Do(ctx, steps...))
}

// eval evaluates a JavaScript expression in the page (awaiting a promise).
func eval[T any](b *tab, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	require.NoError(b.t, err, expr)
	return v
}

// until waits for the JavaScript condition cond to hold in the page. It
// asks again while a page loads (a form sent, a link followed).
func (b *tab) until(what, cond string) {
	b.t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+cond+")"))
		cancel()
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("gave up waiting for %s: %s (last error: %v)", what, cond, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func js(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// text is the trimmed text of the element sel finds ("" when none does).
func (b *tab) text(sel string) string {
	b.t.Helper()
	return eval[string](b, fmt.Sprintf(`document.querySelector(%s)?.textContent.trim() ?? ""`, js(sel)))
}

// shows waits until the element sel finds has the text want.
func (b *tab) shows(sel, want string) {
	b.t.Helper()
	b.until(fmt.Sprintf("%s to show %q (it shows %q)", sel, want, b.text(sel)),
		fmt.Sprintf(`document.querySelector(%s)?.textContent.trim() === %s`, js(sel), js(want)))
}

// contains waits until the element sel finds has want in its text.
func (b *tab) contains(sel, want string) {
	b.t.Helper()
	b.until(fmt.Sprintf("%s to contain %q", sel, want),
		fmt.Sprintf(`(document.querySelector(%s)?.textContent ?? "").includes(%s)`, js(sel), js(want)))
}

// confirm clicks sel, whose action asks for a confirmation, and confirms.
func (b *tab) confirm(sel string) {
	b.t.Helper()
	b.do(chromedp.Click(chromedp.CSS(sel)))
	b.until("the confirmation dialog", `document.querySelector("#confirm").open`)
	b.do(chromedp.Click(chromedp.ID("confirm-ok")))
}

// fits checks that the page has no horizontal overflow at the viewport's
// width and that every control has a label a screen reader reads.
func (b *tab) fits(page string) {
	b.t.Helper()
	width := eval[int](b, `document.documentElement.scrollWidth`)
	inner := eval[int](b, `window.innerWidth`)
	assert.LessOrEqual(b.t, width, inner, "%s overflows a %d px wide screen", page, inner)
	unlabelled := eval[[]string](b, `[...document.querySelectorAll("input:not([type=hidden]), select, textarea, button")]
		.filter(e => !(e.labels?.length || e.getAttribute("aria-label") || e.textContent.trim()))
		.map(e => e.outerHTML)`)
	assert.Empty(b.t, unlabelled, "%s: controls without a label", page)
}

// The console in a real browser: a wrong token refused, a login, a sale
// created through the form (the API's own message first), a flash sale
// watched live, a dead letter requeued, a change without the CSRF token
// refused, the sale ended; at 1280x800 and on a 390-px-wide phone. With
// SECKILL_CONSOLE_SCREENSHOT=docs/admin/console.png it saves the live view of
// the sale there.
func TestConsoleInABrowser(t *testing.T) {
	testutil.SkipShort(t, "drives a browser against a server on Redis and MariaDB")
	s := startSale(t, saleOpts{noWorkers: true, env: map[string]string{"SECKILL_ORDER_MAX_ATTEMPTS": "1"}})
	base := s.urls[0]
	b := newTab(t)
	b.do(chromedp.EmulateViewport(1280, 800), chromedp.Navigate(base+"/console"))

	// Not logged in: the login page. A wrong token is refused.
	b.until("the login page", `location.pathname === "/console/login"`)
	b.do(chromedp.SendKeys(chromedp.ID("token"), "not-the-admin-token"), chromedp.Click(chromedp.ID("login")))
	b.contains("#login-error", "That is not the admin token.")
	b.fits("the login page")
	b.do(chromedp.SendKeys(chromedp.ID("token"), adminToken), chromedp.Click(chromedp.ID("login")))
	b.until("the sales page", `location.pathname === "/console" && document.querySelector("#live").dataset.state === "on"`)
	assert.Empty(t, eval[string](b, `document.cookie`), "the session cookie is HttpOnly")
	assert.Zero(t, eval[int](b, `localStorage.length + sessionStorage.length`), "nothing in browser storage")

	// Create a sale: the API names what is missing, then creates it.
	b.do(chromedp.Click(chromedp.CSS(`nav a[href="/console/new"]`)))
	b.until("the create page", `location.pathname === "/console/new"`)
	b.fits("the create page")
	// A datetime-local input reads back a time of 0 seconds without them
	// ("…T15:04"), and chromedp's SetValue checks what it reads back.
	local := func(at time.Time) string {
		if at.Second() == 0 {
			at = at.Add(time.Second)
		}
		return at.Local().Format("2006-01-02T15:04:05")
	}
	now := time.Now()
	b.do(
		chromedp.SendKeys(chromedp.ID("f-name"), "Console Phone"),
		chromedp.SendKeys(chromedp.ID("f-price"), "99900"),
		chromedp.SendKeys(chromedp.ID("f-limit"), "1"),
		chromedp.SetValue(chromedp.ID("f-starts"), local(now.Add(-time.Minute))),
		chromedp.SetValue(chromedp.ID("f-ends"), local(now.Add(time.Hour))),
		chromedp.Click(chromedp.ID("create-submit")),
	)
	b.contains("#create-result", "400 · invalid_request: invalid sku: a new sku needs stock")
	b.do(chromedp.SendKeys(chromedp.ID("f-stock"), "50"), chromedp.Click(chromedp.ID("create-submit")))
	b.contains("#create-result", "201 · created sale #")
	href := eval[string](b, `document.querySelector("#watch").getAttribute("href")`)
	sku, err := strconv.ParseUint(strings.TrimPrefix(href, "/console/skus/"), 10, 64)
	require.NoError(t, err, href)

	// A seed file, as seckill seed takes it: a bad one writes nothing, a
	// good one is written.
	seed := func(name, text string) {
		path := filepath.Join(t.TempDir(), name)
		require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
		b.do(chromedp.SetUploadFiles(chromedp.ID("seed-file"), []string{path}), chromedp.Click(chromedp.ID("seed-submit")))
	}
	window := fmt.Sprintf("%s,%s", now.UTC().Add(time.Hour).Format(time.RFC3339), now.UTC().Add(2*time.Hour).Format(time.RFC3339))
	seed("bad.csv", "id,name,price_cents,stock,per_user_limit,starts_at,ends_at\n9101,Gift,0,5,1,"+window+"\n9102,Oops,,,,,\n")
	b.contains("#seed-result", `400 · invalid_request: line 3 (id 9102, "Oops"): a new sku needs price_cents`)
	assert.Equal(t, http.StatusNotFound, s.do(0, "GET", "/api/v1/skus/9101", "", nil).Status, "nothing written")
	seed("good.yaml", fmt.Sprintf("- {id: 9101, name: Gift, price_cents: 0, stock: 5, per_user_limit: 1, starts_at: %s, ends_at: %s}\n",
		now.UTC().Add(time.Hour).Format(time.RFC3339), now.UTC().Add(2*time.Hour).Format(time.RFC3339)))
	b.contains("#seed-result", "200 · 1 sale seeded from good.yaml")
	b.contains("#seed-result", "#9101 Gift created")
	assert.Equal(t, "upcoming", s.do(0, "GET", "/api/v1/skus/9101", "", nil).Str("state"))

	// The sale, live.
	b.do(chromedp.Click(chromedp.ID("watch")))
	b.until("the sale page", fmt.Sprintf(`location.pathname === "/console/skus/%d"`, sku))
	b.shows("#f-left", "50")
	b.shows("#sku-state", "live")

	// A dead letter, which the page lists.
	task, _ := deadLetter(t, s, sku, "victim")
	b.shows("#f-dead", "1")
	row := fmt.Sprintf(`#dead tr[data-task=%s]`, js(task))
	b.until("the dead letter's row", fmt.Sprintf(`document.querySelector(%s) !== null`, js(row)))
	assert.Contains(t, b.text(row), "injected failure")

	// A small flash sale in waves, drained by the workers: sold and left
	// change on the page.
	stopWorkers, err := s.apps[0].startWorkers()
	require.NoError(t, err)
	t.Cleanup(stopWorkers)
	var wg sync.WaitGroup
	statuses := make(chan int, 40)
	for wave := range 4 {
		for i := range 10 {
			wg.Go(func() { statuses <- s.buy(0, sku, fmt.Sprintf("shopper-%d-%d", wave, i), 1).Status })
		}
		time.Sleep(time.Second)
	}
	wg.Wait()
	close(statuses)
	for st := range statuses {
		require.Equal(t, http.StatusAccepted, st)
	}
	b.shows("#f-left", "9") // 50, less the dead letter's unit and 40 bought
	b.shows("#f-sold", "40")
	b.shows("#f-paid", "0")
	b.shows("#f-pending", "40")
	b.until("points on the chart", `document.querySelectorAll("#chart canvas").length > 0`)
	b.contains("#audit-status", "violation") // the dead letter's order
	b.fits("the sale page at 1280 px")
	if path := os.Getenv("SECKILL_CONSOLE_SCREENSHOT"); path != "" {
		time.Sleep(3 * time.Second) // a few more points after the last wave
		shot, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
		require.NoError(t, err)
		if !filepath.IsAbs(path) {
			root, err := testutil.ModuleRoot()
			require.NoError(t, err)
			path = filepath.Join(root, path)
		}
		require.NoError(t, os.WriteFile(path, shot, 0o600))
	}

	// Requeued, the dead letter's order is drained too.
	b.confirm(row + ` button[data-act="requeue"]`)
	b.contains("#action-result", "200 · dead letter "+task+" requeued")
	b.shows("#f-dead", "0")
	b.shows("#f-sold", "41")
	b.contains("#dead tbody", "No dead letters.")

	// A change without the session's CSRF token, or with a wrong one, is
	// refused, and changes nothing.
	end := fmt.Sprintf(`/console/api/skus/%d/end`, sku)
	assert.Equal(t, http.StatusForbidden, eval[int](b, fmt.Sprintf(`fetch(%s, {method: "POST"}).then(r => r.status)`, js(end))))
	assert.Equal(t, http.StatusForbidden, eval[int](b, fmt.Sprintf(
		`fetch(%s, {method: "POST", headers: {"X-CSRF-Token": "forged"}}).then(r => r.status)`, js(end))))
	assert.Equal(t, "live", s.do(0, "GET", fmt.Sprintf("/api/v1/skus/%d", sku), "", nil).Str("state"))

	// Ending the sale: confirmed, answered, and no buy is taken after it.
	b.confirm("#end-sale")
	b.contains("#action-result", "200 · sale ended at")
	b.shows("#sku-state", "ended")
	late := s.buy(0, sku, "late", 1)
	assert.Equal(t, http.StatusForbidden, late.Status)
	assert.Equal(t, "sale_ended", late.Str("error"))

	// The sales page lists it as it is.
	b.do(chromedp.Navigate(base + "/console"))
	cell := func(field string) string { return fmt.Sprintf(`#sales tr[data-sku="%d"] [data-field=%s]`, sku, field) }
	b.shows(cell("sold"), "41")
	b.shows(cell("left"), "9")
	b.shows(cell("state"), "ended")
	b.fits("the sales page at 1280 px")

	// On a phone, 390 px wide: no page is wider than the screen.
	b.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulatePortrait))
	for page, ready := range map[string]string{
		"/console":                           cell("sold"),
		"/console/new":                       "#create",
		fmt.Sprintf("/console/skus/%d", sku): "#queue tbody th",
	} {
		b.do(chromedp.Navigate(base + page))
		b.until(page+" drawn", fmt.Sprintf(`document.readyState === "complete" && document.querySelector(%s) !== null`, js(ready)))
		b.fits(page + " at 390 px")
	}

	b.do(chromedp.Click(chromedp.CSS(`form.logout button`)))
	b.until("the login page after logout", `location.pathname === "/console/login"`)
	b.do(chromedp.Navigate(base + "/console"))
	b.until("the login page again", `location.pathname === "/console/login"`)
}
