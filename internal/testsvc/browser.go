package testsvc

import (
	"os/exec"
	"testing"
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
