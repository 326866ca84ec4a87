package apidocs

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newTest(t *testing.T) http.Handler {
	t.Helper()
	gin.SetMode(gin.TestMode)
	r := gin.New()
	g := r.Group("/docs", Headers)
	g.GET("", Page("/openapi.json"))
	g.GET("/assets/:file", Asset)
	return r
}

func get(h http.Handler, target string, header ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, "http://docs.test"+target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// The policy allows this server's script and no other, inline styles (which
// Redoc needs) but never inline script, and nothing from elsewhere.
func TestThePolicyAllowsNoInlineScript(t *testing.T) {
	h := newTest(t)
	for _, target := range []string{"/docs", "/docs/assets/redoc.js", "/docs/assets/docs.css", "/docs/assets/nope.js"} {
		w := get(h, target)
		policy := map[string]string{}
		for _, d := range strings.Split(w.Header().Get("Content-Security-Policy"), ";") {
			name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
			policy[name] = value
		}
		assert.Equal(t, "'none'", policy["default-src"], target)
		assert.Equal(t, "'self'", policy["script-src"], target)
		assert.Equal(t, "'self' 'unsafe-inline'", policy["style-src"], target)
		assert.Equal(t, "'self'", policy["connect-src"], target)
		assert.Equal(t, "'none'", policy["frame-ancestors"], target)
		assert.Equal(t, "nosniff", w.Header().Get("X-Content-Type-Options"), target)
		assert.Equal(t, "DENY", w.Header().Get("X-Frame-Options"), target)
	}
}

// The page is HTML with no script of its own: it loads Redoc's by its
// version and names the document Redoc renders.
func TestThePageLoadsRedocOnTheDocument(t *testing.T) {
	h := newTest(t)
	w := get(h, "/docs")
	require.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, "text/html; charset=utf-8", w.Header().Get("Content-Type"))
	assert.Equal(t, "no-cache", w.Header().Get("Cache-Control"))
	body := w.Body.String()
	assert.Contains(t, body, `<redoc spec-url="/openapi.json"></redoc>`)
	scripts := regexp.MustCompile(`<script[^>]*>`).FindAllString(body, -1)
	require.Len(t, scripts, 1, body)
	assert.Regexp(t, `^<script src="/docs/assets/redoc\.js\?v=[0-9a-f]{12}" defer>$`, scripts[0])
	assert.NotContains(t, body, "<style", "no inline style of its own either")
	assert.NotRegexp(t, `(?i)\son[a-z]+=`, body, "no inline event handler")

	etag := w.Header().Get("ETag")
	require.NotEmpty(t, etag)
	again := get(h, "/docs", "If-None-Match", etag)
	assert.Equal(t, http.StatusNotModified, again.Code)
	assert.Empty(t, again.Body.String())
}

// An asset asked by its version, as the page asks, is kept for good; asked
// otherwise it is checked again each time.
func TestAssetsAreCachedByVersion(t *testing.T) {
	h := newTest(t)
	page := get(h, "/docs").Body.String()
	for name, contentType := range map[string]string{"redoc.js": "text/javascript; charset=utf-8", "docs.css": "text/css; charset=utf-8"} {
		url := regexp.MustCompile(`/docs/assets/` + regexp.QuoteMeta(name) + `\?v=[0-9a-f]+`).FindString(page)
		require.NotEmpty(t, url, name)
		w := get(h, url)
		require.Equal(t, http.StatusOK, w.Code, url)
		assert.Equal(t, contentType, w.Header().Get("Content-Type"), url)
		assert.Equal(t, "public, max-age=31536000, immutable", w.Header().Get("Cache-Control"), url)
		assert.NotEmpty(t, w.Body.Bytes(), url)

		unversioned := get(h, "/docs/assets/"+name)
		assert.Equal(t, http.StatusOK, unversioned.Code, name)
		assert.Equal(t, "no-cache", unversioned.Header().Get("Cache-Control"), name)
		stale := get(h, "/docs/assets/"+name+"?v=000000000000")
		assert.Equal(t, "no-cache", stale.Header().Get("Cache-Control"), name)
		assert.Equal(t, http.StatusNotModified, get(h, url, "If-None-Match", w.Header().Get("ETag")).Code, name)
	}
	assert.True(t, strings.HasPrefix(string(assets["redoc.js"].body), "/*! seckill API reference. Redoc "),
		"the bundle opens with its licence banner")
}

func TestAnUnknownAssetIsNotFound(t *testing.T) {
	h := newTest(t)
	for _, target := range []string{"/docs/assets/nope.js", "/docs/assets/page.html", "/docs/assets/redoc.js.map"} {
		w := get(h, target)
		assert.Equal(t, http.StatusNotFound, w.Code, target)
		assert.JSONEq(t, `{"error":"not_found","detail":"no such asset"}`, w.Body.String(), target)
	}
}
