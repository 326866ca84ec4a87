package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testutil"
)

// GET / is for a browser: the console when it is on, the API reference
// otherwise.
func TestTheFrontDoorRedirects(t *testing.T) {
	for _, c := range []struct {
		name string
		h    http.Handler
		want string
	}{
		{"the console on", consoleAPI(t, testAdminToken), "/console"},
		{"the admin API on, without the console", rawAPI(t, nil), "/docs"},
		{"the admin API off", consoleAPI(t, ""), "/docs"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := send(c.h, "GET", "/", nil, nil)
			assert.Equal(t, http.StatusFound, w.Code)
			assert.Equal(t, c.want, w.Header().Get("Location"))
		})
	}
}

// The API reference is served whatever is on, and its page loads the
// document this server serves.
func TestTheAPIReferenceIsServed(t *testing.T) {
	for _, h := range []http.Handler{rawAPI(t, nil), consoleAPI(t, "")} {
		w := send(h, "GET", "/docs", nil, nil)
		require.Equal(t, http.StatusOK, w.Code)
		assert.Equal(t, "text/html; charset=utf-8", w.Header().Get("Content-Type"))
		assert.Contains(t, w.Header().Get("Content-Security-Policy"), "script-src 'self';")
		spec := regexp.MustCompile(`spec-url="([^"]+)"`).FindStringSubmatch(w.Body.String())
		require.NotNil(t, spec, w.Body.String())
		doc := send(h, "GET", spec[1], nil, nil)
		assert.Equal(t, http.StatusOK, doc.Code, spec[1])
		assert.Contains(t, doc.Body.String(), `"operationId":"placeOrder"`)

		script := regexp.MustCompile(`<script[^>]* src="([^"]+)"`).FindStringSubmatch(w.Body.String())
		require.NotNil(t, script, w.Body.String())
		js := send(h, "GET", script[1], nil, nil)
		assert.Equal(t, http.StatusOK, js.Code, script[1])
		assert.Equal(t, "text/javascript; charset=utf-8", js.Header().Get("Content-Type"))
	}
}

// The API reference in a real browser, under its Content-Security-Policy:
// Redoc renders the document, the buy is among its operations and a
// search finds it; nothing is fetched from anywhere but this server, and no
// inline script runs.
func TestTheAPIReferenceInABrowser(t *testing.T) {
	testutil.SkipShort(t, "drives a browser")
	srv := httptest.NewServer(rawAPI(t, nil))
	t.Cleanup(srv.Close)
	ctx := testsvc.Browser(t)
	run := func(steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		require.NoError(t, chromedp.Do(ctx, steps...))
	}
	eval := func(expr string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
		require.NoError(t, err, expr)
		return v
	}
	// Every violation of the page's policy is recorded, from before its
	// first script runs.
	run(chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, cdppage.AddScriptToEvaluateOnNewDocument, cdppage.AddScriptToEvaluateOnNewDocumentParams{
			Source: `window.violations = []; window.addEventListener("securitypolicyviolation",
				e => window.violations.push(e.effectiveDirective + " " + e.blockedURI));`,
		})
		return err
	}))
	run(chromedp.EmulateViewport(1280, 800), chromedp.Navigate(srv.URL+"/docs"))

	// The buy, as Redoc renders an operation: its summary as a heading,
	// the method and the path beside it.
	buy := `document.querySelector('[id="tag/shopper/operation/placeOrder"]')`
	run(chromedp.WaitVisible(chromedp.CSS(`[id="tag/shopper/operation/placeOrder"] h2`)))
	assert.Equal(t, "Place an order (buy)", eval(buy+`.querySelector("h2").innerText.trim()`))
	assert.Regexp(t, `(?i)post\s*/api/v1/orders`, eval(buy+`.innerText`))

	// A search finds it, and its result leads to it.
	run(chromedp.SendKeys(chromedp.CSS(`input[aria-label="Search"]`), "buy"))
	run(chromedp.Click(chromedp.Search(`//*[@data-role="search:results"]//*[@role="menuitem"][@aria-label="Place an order (buy)"]`)))
	run(chromedp.Poll[chromedp.Void](`location.hash === "#tag/shopper/operation/placeOrder"`))
	run(chromedp.Poll[chromedp.Void](`(r => r.bottom > 0 && r.top < innerHeight)(` + buy + `.querySelector("h2").getBoundingClientRect())`))

	violations := eval(`window.violations.join("\n")`)
	// The sidebar's Redocly logo is an image on their CDN: the policy
	// refuses it and Redoc hides it.
	for _, v := range strings.Split(violations, "\n") {
		if v != "" && v != "img-src https://cdn.redoc.ly/redoc/logo-mini.svg" {
			t.Errorf("the page broke its policy: %s", v)
		}
	}
}
