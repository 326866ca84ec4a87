package console

import (
	"crypto/tls"
	"encoding/json"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/testutil"
)

const token = "console-test-admin-token-0123456789abcdef"

// newTest returns a console on token with a clock the test sets, serving
// its pages and, under /console/api, GET and POST /echo in place of the
// admin routes. Nothing here reads the stores.
func newTest(t *testing.T, token string, clock *testutil.Clock) (*Console, http.Handler) {
	t.Helper()
	return newTestWith(t, Options{Token: token, Now: clock.Now})
}

// newTestWith is newTest on options o.
func newTestWith(t *testing.T, o Options) (*Console, http.Handler) {
	t.Helper()
	return newTestOn(t, nil, o)
}

// newTestOn is newTest on sales and options o.
func newTestOn(t *testing.T, sales Sales, o Options) (*Console, http.Handler) {
	t.Helper()
	o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := New(sales, o)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	gin.SetMode(gin.TestMode)
	r := gin.New()
	echo := func(ctx *gin.Context) { ctx.JSON(http.StatusOK, gin.H{"method": ctx.Request.Method}) }
	c.Routes(r.Group("/console"), func(g *gin.RouterGroup) {
		g.GET("/echo", echo)
		g.POST("/echo", echo)
	})
	return c, r
}

func do(h http.Handler, method, target string, body io.Reader, edit func(*http.Request)) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, "http://console.test"+target, body)
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if edit != nil {
		edit(req)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func login(h http.Handler, tok string, edit func(*http.Request)) *httptest.ResponseRecorder {
	return do(h, "POST", "/console/login", strings.NewReader(url.Values{"token": {tok}}.Encode()), edit)
}

// sessionOf logs in and returns the session cookie and the CSRF token of
// the sales page.
func sessionOf(t *testing.T, h http.Handler) (*http.Cookie, string) {
	t.Helper()
	w := login(h, token, nil)
	require.Equal(t, http.StatusSeeOther, w.Code, w.Body.String())
	cookies := w.Result().Cookies()
	require.Len(t, cookies, 1)
	page := do(h, "GET", "/console", nil, withCookie(cookies[0]))
	require.Equal(t, http.StatusOK, page.Code)
	m := regexp.MustCompile(`<meta name="csrf-token" content="([^"]+)">`).FindStringSubmatch(page.Body.String())
	require.NotNil(t, m, "the page carries its CSRF token")
	return cookies[0], m[1]
}

func withCookie(c *http.Cookie, more ...func(*http.Request)) func(*http.Request) {
	return func(r *http.Request) {
		r.AddCookie(c)
		for _, f := range more {
			f(r)
		}
	}
}

func header(k, v string) func(*http.Request) { return func(r *http.Request) { r.Header.Set(k, v) } }

func TestLoginGivesAStrictHttpOnlyCookieWithoutTheToken(t *testing.T) {
	_, h := newTest(t, token, testutil.NewClock(time.Now()))
	w := login(h, token, nil)
	require.Equal(t, http.StatusSeeOther, w.Code)
	assert.Equal(t, "/console", w.Header().Get("Location"))
	c := w.Result().Cookies()[0]
	assert.Equal(t, cookieName, c.Name)
	assert.True(t, c.HttpOnly)
	assert.Equal(t, http.SameSiteStrictMode, c.SameSite)
	assert.Equal(t, "/console", c.Path)
	assert.False(t, c.Secure, "plain HTTP: a Secure cookie would never come back")
	assert.Equal(t, int((8 * time.Hour).Seconds()), c.MaxAge)
	assert.NotContains(t, c.Value, token)
	assert.NotContains(t, w.Header().Get("Set-Cookie"), token)

	tlsReq := login(h, token, func(r *http.Request) { r.TLS = &tls.ConnectionState{} })
	assert.True(t, tlsReq.Result().Cookies()[0].Secure, "over TLS the cookie is Secure")
	proxied := login(h, token, header("X-Forwarded-Proto", "https"))
	assert.True(t, proxied.Result().Cookies()[0].Secure, "behind a proxy that terminates TLS too")
}

func TestAWrongTokenIsRefusedAndSaysNothingElse(t *testing.T) {
	clock := testutil.NewClock(time.Now())
	_, h := newTest(t, token, clock)
	for _, wrong := range []string{"", "nope", token[:len(token)-1], token + "x", strings.ToUpper(token)} {
		w := login(h, wrong, nil)
		assert.Equal(t, http.StatusUnauthorized, w.Code, "%q", wrong)
		assert.Empty(t, w.Result().Cookies(), "no session for %q", wrong)
		assert.Contains(t, w.Body.String(), "That is not the admin token.")
		assert.NotContains(t, w.Body.String(), token)
	}
	// Ten wrong tokens a minute from one address, then nothing until the
	// minute ends, the right token included.
	for range 5 {
		login(h, "nope", nil)
	}
	w := login(h, token, nil)
	assert.Equal(t, http.StatusTooManyRequests, w.Code)
	assert.NotEmpty(t, w.Header().Get("Retry-After"))
	assert.Empty(t, w.Result().Cookies())
	other := login(h, token, func(r *http.Request) { r.RemoteAddr = "192.0.2.7:1234" })
	assert.Equal(t, http.StatusSeeOther, other.Code, "another address is not held back")
	clock.Advance(time.Minute)
	assert.Equal(t, http.StatusSeeOther, login(h, token, nil).Code, "a minute later")
}

// stalledBody is a form body whose bytes arrive only once release is
// closed: a client that sends its headers, then its body later.
type stalledBody struct {
	r       io.Reader
	release chan struct{}
	started chan struct{}
	once    sync.Once
}

func (b *stalledBody) Read(p []byte) (int, error) {
	b.once.Do(func() { close(b.started) })
	<-b.release
	return b.r.Read(p)
}

// The limit of 10 wrong tokens a minute per address holds for logins that
// arrive together: each is counted before its token is read, so a client
// that sends many logins and holds their bodies back gets 10 guesses, not
// one per connection.
func TestTheLoginLimitHoldsForLoginsArrivingTogether(t *testing.T) {
	_, h := newTest(t, token, testutil.NewClock(time.Now()))
	const n = 100
	release := make(chan struct{})
	codes := make(chan int, n)
	var wg sync.WaitGroup
	for i := range n {
		b := &stalledBody{r: strings.NewReader(url.Values{"token": {"wrong-" + string(rune('a'+i%26))}}.Encode()),
			release: release, started: make(chan struct{})}
		answered := make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(answered)
			codes <- do(h, "POST", "/console/login", b, nil).Code
		}()
		select {
		case <-b.started: // let through: the handler waits for the body
		case <-answered: // refused before its body was read
		}
	}
	close(release)
	wg.Wait()
	close(codes)
	guesses := 0
	for c := range codes {
		if c == http.StatusUnauthorized {
			guesses++
		}
	}
	assert.LessOrEqual(t, guesses, 10, "wrong tokens checked from one address within the minute")
}

func TestPagesFeedAndAPINeedASession(t *testing.T) {
	_, h := newTest(t, token, testutil.NewClock(time.Now()))
	for _, p := range []string{"/console", "/console/new", "/console/skus/1", "/console/receivers"} {
		w := do(h, "GET", p, nil, nil)
		assert.Equal(t, http.StatusSeeOther, w.Code, p)
		assert.Equal(t, "/console/login", w.Header().Get("Location"), p)
	}
	for _, p := range []string{"/console/events", "/console/api/echo"} {
		w := do(h, "GET", p, nil, nil)
		assert.Equal(t, http.StatusUnauthorized, w.Code, p)
		assert.JSONEq(t, `{"error":"unauthorized","detail":"log in to the console first: your session is missing or has expired"}`, w.Body.String())
	}
	forged := &http.Cookie{Name: cookieName, Value: "AAAAAGsIt__2TFPZ90DLOL2d9KzbqxqgDg-vxH7OriRckjvhgUzOK5tB8r5hD75cWqgeC6FsKoE"}
	assert.Equal(t, http.StatusUnauthorized, do(h, "GET", "/console/api/echo", nil, withCookie(forged)).Code)
	login := do(h, "GET", "/console/login", nil, nil)
	assert.Equal(t, http.StatusOK, login.Code)
	assert.Contains(t, login.Body.String(), `<label for="token">Admin token</label>`)
}

func TestChangesNeedTheSessionsCSRFToken(t *testing.T) {
	_, h := newTest(t, token, testutil.NewClock(time.Now()))
	cookie, csrf := sessionOf(t, h)
	_, other := sessionOf(t, h)
	require.NotEqual(t, csrf, other, "each session has its own token")

	assert.Equal(t, http.StatusOK, do(h, "GET", "/console/api/echo", nil, withCookie(cookie)).Code, "a read needs none")
	wrong := "x" + csrf[1:]
	if wrong == csrf {
		wrong = "y" + csrf[1:]
	}
	for name, tok := range map[string]string{"missing": "", "wrong": wrong, "another session's": other} {
		w := do(h, "POST", "/console/api/echo", nil, withCookie(cookie, header("X-CSRF-Token", tok)))
		assert.Equal(t, http.StatusForbidden, w.Code, name)
		assert.JSONEq(t, `{"error":"csrf_refused","detail":"missing or wrong CSRF token: reload the page and try again"}`, w.Body.String(), name)
	}
	w := do(h, "POST", "/console/api/echo", nil, withCookie(cookie, header("X-CSRF-Token", csrf)))
	assert.Equal(t, http.StatusOK, w.Code, w.Body.String())

	// The logout form sends it as a field.
	assert.Equal(t, http.StatusForbidden, do(h, "POST", "/console/logout", strings.NewReader(""), withCookie(cookie)).Code)
	out := do(h, "POST", "/console/logout", strings.NewReader("csrf_token="+url.QueryEscape(csrf)), withCookie(cookie))
	require.Equal(t, http.StatusSeeOther, out.Code, out.Body.String())
	gone := out.Result().Cookies()[0]
	assert.Equal(t, cookieName, gone.Name)
	assert.Empty(t, gone.Value)
	assert.Negative(t, gone.MaxAge, "the browser deletes it")
}

func TestChangesFromAnotherSiteAreRefused(t *testing.T) {
	_, h := newTest(t, token, testutil.NewClock(time.Now()))
	cookie, csrf := sessionOf(t, h)
	for name, edit := range map[string]func(*http.Request){
		"cross-site fetch": header("Sec-Fetch-Site", "cross-site"),
		"same-site fetch":  header("Sec-Fetch-Site", "same-site"),
		"other origin":     header("Origin", "https://evil.test"),
	} {
		w := do(h, "POST", "/console/api/echo", nil, withCookie(cookie, header("X-CSRF-Token", csrf), edit))
		assert.Equal(t, http.StatusForbidden, w.Code, name)
		assert.Contains(t, w.Body.String(), "cross_site", name)
		assert.Equal(t, http.StatusForbidden, login(h, token, edit).Code, "login, %s", name)
	}
	w := do(h, "POST", "/console/api/echo", nil, withCookie(cookie, header("X-CSRF-Token", csrf),
		header("Origin", "http://console.test"), header("Sec-Fetch-Site", "same-origin")))
	assert.Equal(t, http.StatusOK, w.Code, "its own pages")
}

func TestEveryAnswerForbidsInlineScriptAndFraming(t *testing.T) {
	_, h := newTest(t, token, testutil.NewClock(time.Now()))
	cookie, csrf := sessionOf(t, h)
	for _, r := range []*httptest.ResponseRecorder{
		do(h, "GET", "/console/login", nil, nil),
		login(h, "wrong", nil),
		do(h, "GET", "/console", nil, withCookie(cookie)),
		do(h, "GET", "/console/new", nil, withCookie(cookie)),
		do(h, "GET", "/console/receivers", nil, withCookie(cookie)),
		do(h, "GET", "/console/api/echo", nil, withCookie(cookie)),
		do(h, "POST", "/console/api/echo", nil, withCookie(cookie)),
		do(h, "GET", "/console/assets/console.js", nil, nil),
	} {
		hd := r.Header()
		assert.Equal(t, csp, hd.Get("Content-Security-Policy"))
		assert.Contains(t, csp, "script-src 'self';")
		assert.NotContains(t, csp, "unsafe-inline")
		assert.Equal(t, "nosniff", hd.Get("X-Content-Type-Options"))
		assert.Equal(t, "DENY", hd.Get("X-Frame-Options"))
		assert.Equal(t, "same-origin", hd.Get("Referrer-Policy"))
	}
	page := do(h, "GET", "/console/new", nil, withCookie(cookie))
	assert.Equal(t, "no-store", page.Header().Get("Cache-Control"))
	assert.Contains(t, page.Body.String(), csrf)
}

// The templates have no inline script, no inline style and no control
// without a label.
func TestTemplatesHaveNoInlineCodeAndLabelEveryControl(t *testing.T) {
	names, err := fs.Glob(files, "templates/*.html")
	require.NoError(t, err)
	require.NotEmpty(t, names)
	inlineScript := regexp.MustCompile(`<script(?:\s[^>]*)?>\s*[^<\s]`)
	handler := regexp.MustCompile(`\son[a-z]+=`)
	control := regexp.MustCompile(`<(input|select|textarea)\s[^>]*>`)
	id := regexp.MustCompile(`\sid="([^"]+)"`)
	for _, name := range names {
		b, err := fs.ReadFile(files, name)
		require.NoError(t, err)
		text := string(b)
		assert.NotRegexp(t, inlineScript, text, name)
		assert.NotRegexp(t, handler, text, name)
		assert.NotContains(t, text, " style=", name)
		assert.NotContains(t, text, "<style", name)
		for _, c := range control.FindAllString(text, -1) {
			if strings.Contains(c, `type="hidden"`) {
				continue
			}
			m := id.FindStringSubmatch(c)
			require.NotNil(t, m, "%s: %s has an id", name, c)
			assert.Contains(t, text, `<label for="`+m[1]+`"`, "%s: %s has a label", name, c)
		}
	}
}

func TestAnotherInstanceWithTheTokenAcceptsTheSessionUntilItExpires(t *testing.T) {
	clock := testutil.NewClock(time.Now())
	_, h := newTest(t, token, clock)
	cookie, csrf := sessionOf(t, h)
	_, same := newTest(t, token, clock)
	_, rotated := newTest(t, token+"-new", clock)
	w := do(same, "POST", "/console/api/echo", nil, withCookie(cookie, header("X-CSRF-Token", csrf)))
	assert.Equal(t, http.StatusOK, w.Code, "one instance's session and CSRF token work on another")
	assert.Equal(t, http.StatusUnauthorized, do(rotated, "GET", "/console/api/echo", nil, withCookie(cookie)).Code,
		"a new admin token ends every session")
	clock.Advance(8*time.Hour - time.Second)
	assert.Equal(t, http.StatusOK, do(h, "GET", "/console/api/echo", nil, withCookie(cookie)).Code)
	clock.Advance(time.Second)
	assert.Equal(t, http.StatusUnauthorized, do(h, "GET", "/console/api/echo", nil, withCookie(cookie)).Code, "expired")
	assert.Equal(t, http.StatusSeeOther, do(h, "GET", "/console", nil, withCookie(cookie)).Code)
}

func TestAssetsAreSmallAndVersioned(t *testing.T) {
	c, h := newTest(t, token, testutil.NewClock(time.Now()))
	total := 0
	for name, a := range c.pages.assets {
		total += len(a.body)
		w := do(h, "GET", "/console/assets/"+name+"?v="+a.version, nil, nil)
		require.Equal(t, http.StatusOK, w.Code)
		assert.Equal(t, "public, max-age=31536000, immutable", w.Header().Get("Cache-Control"), name)
		assert.Equal(t, a.contentType, w.Header().Get("Content-Type"))
		assert.Equal(t, "no-cache", do(h, "GET", "/console/assets/"+name, nil, nil).Header().Get("Cache-Control"),
			"%s without its version may change", name)
		assert.Equal(t, http.StatusNotModified, do(h, "GET", "/console/assets/"+name, nil, header("If-None-Match", `"`+a.version+`"`)).Code)
	}
	assert.Less(t, total, 150<<10, "the console's assets stay small")
	assert.Equal(t, http.StatusNotFound, do(h, "GET", "/console/assets/nope.js", nil, nil).Code)
}

func TestTheConsoleNeedsAToken(t *testing.T) {
	_, err := New(nil, Options{})
	assert.Error(t, err)
}

func TestEventsRefuseABadSKU(t *testing.T) {
	_, h := newTest(t, token, testutil.NewClock(time.Now()))
	cookie, _ := sessionOf(t, h)
	w := do(h, "GET", "/console/events?sku=x", nil, withCookie(cookie))
	assert.Equal(t, http.StatusBadRequest, w.Code)
	var body map[string]string
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body))
	assert.Equal(t, "invalid_request", body["error"])
}
