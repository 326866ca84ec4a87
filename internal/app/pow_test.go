package app

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/testutil"
)

// importSolver loads web/pow/solve.js into the page as a module, as
// window.pow.
func (b *tab) importSolver() {
	b.t.Helper()
	src, err := os.ReadFile("../../web/pow/solve.js")
	require.NoError(b.t, err)
	eval[bool](b, `(async () => {
		const url = URL.createObjectURL(new Blob([`+js(string(src))+`], {type: "text/javascript"}));
		window.pow = await import(url);
		return true;
	})()`)
}

// The shop front's solver in a real browser, against a real server: a
// room asking for a proof of work; web/pow/solve.js gets a challenge,
// solves it with Web Crypto and joins with a ticket. A shopper without a
// proof is refused, and the one with a ticket joins again without one.
func TestPowSolverInABrowser(t *testing.T) {
	testutil.SkipShort(t, "drives a browser against a server on Redis and MariaDB")
	s := startSale(t, saleOpts{noWorkers: true, env: map[string]string{"SECKILL_ROOM_PASS_KEYS": roomKey}})
	const bits = 12
	sku := s.seedRoom(10, time.Minute, map[string]any{"mode": "fifo", "pow_bits": bits})
	queue := fmt.Sprintf("/api/v1/skus/%d/queue", sku)
	v := s.do(0, "GET", fmt.Sprintf("/api/v1/skus/%d", sku), "", nil)
	require.Equal(t, http.StatusOK, v.Status, v.Raw)
	assert.EqualValues(t, bits, v.Body["waiting_room"].(map[string]any)["pow_bits"], v.Raw)

	r := s.do(0, "POST", queue, "quinn", nil)
	assert.Equal(t, http.StatusForbidden, r.Status, r.Raw)
	assert.Equal(t, "pow_required", r.Str("error"))

	b := newTab(t)
	b.do(chromedp.Navigate(s.urls[0] + "/healthz"))
	b.importSolver()
	joined := eval[map[string]any](b, `pow.joinWaitingRoom(location.origin, `+strconv.FormatUint(sku, 10)+`, {headers: {"X-User-ID": "pat"}})`)
	ticket, _ := joined["ticket"].(string)
	require.NotEmpty(t, ticket, "%v", joined)
	assert.Equal(t, "waiting", joined["status"])

	again := s.do(0, "POST", queue, "pat", nil)
	require.Equal(t, http.StatusOK, again.Status, again.Raw)
	assert.Equal(t, ticket, again.Str("ticket"), "a ticket held joins again without a proof")
	back := eval[map[string]any](b, `pow.joinWaitingRoom(location.origin, `+strconv.FormatUint(sku, 10)+`, {headers: {"X-User-ID": "pat"}})`)
	assert.Equal(t, ticket, back["ticket"], "the solver answers a ticket held without solving")

	// The solver's own hash, as the server's: a nonce it finds for a
	// challenge solves it in Go too.
	c := s.do(0, "GET", queue+"/challenge", "quinn", nil)
	require.Equal(t, http.StatusOK, c.Status, c.Raw)
	solved := eval[map[string]any](b, `pow.solvePow(`+js(c.Str("challenge"))+`, `+strconv.Itoa(bits)+`)`)
	nonce, _ := solved["nonce"].(string)
	require.NotEmpty(t, nonce)
	req, err := s.caller().Request(s.urls[0], "POST", queue, "quinn", nil)
	require.NoError(t, err)
	req.Header.Set("Seckill-PoW", c.Str("challenge")+":"+nonce)
	r, err = s.caller().Send(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	assert.NotEmpty(t, r.Str("ticket"))
	assert.NotEqual(t, ticket, r.Str("ticket"))

	if os.Getenv("SECKILL_POW_RATE") != "" {
		for _, rate := range []float64{1, 4} {
			b.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
				_, err := cdp.Call(ctx, tg, emulation.SetCPUThrottlingRate, emulation.SetCPUThrottlingRateParams{Rate: rate})
				return err
			}))
			// Hashes for 10 s at a number of zero bits never reached.
			hps := eval[float64](b, `(async () => {
				let hashes = 0;
				const t0 = performance.now();
				const signal = AbortSignal.timeout(10000);
				try {
					await pow.solvePow("c1.rate", 256, {signal, onProgress: (n) => { hashes = n; }});
				} catch (e) {}
				return hashes / ((performance.now() - t0) / 1000);
			})()`)
			t.Logf("solve.js in Chromium, CPU throttled %gx: %.0f hashes/s", rate, hps)
		}
	}
}
