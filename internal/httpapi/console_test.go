package httpapi

import (
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/console"
)

// consoleAPI is the API on stubs with the console, on the admin token
// token (empty: the admin API off).
func consoleAPI(t *testing.T, token string) http.Handler {
	t.Helper()
	c, err := console.New(stubAdmin{}, console.Options{Token: testAdminToken, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	// Not held to api/openapi.yaml: the console's pages are HTML.
	return rawAPI(t, func(d *Deps) {
		d.AdminToken = token
		d.Console = c
	})
}

func TestTheConsoleIsOffWithTheAdminAPI(t *testing.T) {
	h := consoleAPI(t, "")
	for _, p := range []string{"/console", "/console/login", "/console/api/skus", "/console/assets/console.js"} {
		w := send(h, "GET", p, nil, nil)
		assert.Equal(t, http.StatusForbidden, w.Code, p)
		assert.Contains(t, w.Body.String(), `"error":"admin_disabled"`, p)
	}
	assert.Equal(t, http.StatusForbidden, send(h, "POST", "/console/login", []byte("token=x"), nil).Code)
}

// The console's calls are the admin API's handlers: the same answers, the
// same validation messages, behind the session and its CSRF token instead
// of the bearer token.
func TestTheConsoleCallsTheAdminAPIsOwnHandlers(t *testing.T) {
	h := consoleAPI(t, testAdminToken)
	login := send(h, "POST", "/console/login", []byte(url.Values{"token": {testAdminToken}}.Encode()),
		map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
	require.Equal(t, http.StatusSeeOther, login.Code, login.Body.String())
	cookie := login.Result().Cookies()[0]
	page := send(h, "GET", "/console/new", nil, map[string]string{"Cookie": cookie.String()})
	require.Equal(t, http.StatusOK, page.Code)
	csrf := regexp.MustCompile(`name="csrf-token" content="([^"]+)"`).FindStringSubmatch(page.Body.String())[1]

	body := []byte(`{"name":"Phone X","stock":10}`)
	viaAPI := send(h, "POST", "/admin/skus", body, map[string]string{"Authorization": "Bearer " + testAdminToken})
	viaConsole := send(h, "POST", "/console/api/skus", body, map[string]string{"Cookie": cookie.String(), "X-CSRF-Token": csrf})
	assert.Equal(t, http.StatusBadRequest, viaConsole.Code)
	assert.Equal(t, viaAPI.Code, viaConsole.Code)
	assert.JSONEq(t, viaAPI.Body.String(), viaConsole.Body.String())
	assert.Contains(t, viaConsole.Body.String(), "price_cents")

	noCSRF := send(h, "POST", "/console/api/skus", body, map[string]string{"Cookie": cookie.String()})
	assert.Equal(t, http.StatusForbidden, noCSRF.Code)
	bearer := send(h, "GET", "/console/api/skus", nil, map[string]string{"Authorization": "Bearer " + testAdminToken})
	assert.Equal(t, http.StatusUnauthorized, bearer.Code, "the console's API takes its session, not the token")
	list := send(h, "GET", "/console/api/skus", nil, map[string]string{"Cookie": cookie.String()})
	assert.Equal(t, http.StatusOK, list.Code, list.Body.String())
	assert.True(t, strings.HasPrefix(list.Header().Get("Content-Security-Policy"), "default-src 'self'"))
	assert.Equal(t, http.StatusNotFound, send(h, "GET", "/console/api/orders", nil, map[string]string{"Cookie": cookie.String()}).Code,
		"only the routes on sales")
}
