package testsvc

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// Chromium returns the path of Debian's Chromium, which
// scripts/test-services.sh installs with chromium-driver; without it the
// test skips, or fails with CI=true.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "/usr/bin/chromium"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	Missing(t, "chromium not found for the browser tests; %s", startServicesMsg)
	return ""
}

// ChromiumFlags are the command-line flags of a test's headless Chromium,
// besides a fresh --user-data-dir: no sandbox (tests run as root), no GPU,
// and none of the background traffic that a closed network would leave
// hanging (QUIC, component updates, sync, first-run tasks).
var ChromiumFlags = []string{
	"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
	"--disable-background-networking", "--disable-component-update", "--disable-sync",
	"--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio",
}

// Browser starts Chromium, headless with ChromiumFlags and a profile of its
// own, and returns the chromedp context of its first tab; the browser is
// closed when the test ends. The browser lives as long as this context:
// derive a step's timeout from it, never start it under one.
func Browser(t testing.TB) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(Chromium(t)), chromedp.UserDataDir(t.TempDir()))
	for _, f := range ChromiumFlags {
		name, value, ok := strings.Cut(strings.TrimPrefix(f, "--"), "=")
		if ok {
			opts = append(opts, chromedp.Flag(name, value))
		} else {
			opts = append(opts, chromedp.Flag(name, true))
		}
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}
