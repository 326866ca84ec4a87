// Package apidocs serves seckill's API reference: a page on which Redoc
// renders the OpenAPI document (api/openapi.yaml) in the browser, and
// Redoc's script, embedded in the binary as `make apidocs` builds it from
// npm (web/) into assets/.
//
// Guarantees: the page and its assets come from this server only and make
// the browser fetch nothing from elsewhere (Redoc uses the system's fonts);
// their Content-Security-Policy allows this server's script and no inline
// script. Assets are served for good when asked by their version, which
// the page's links carry.
package apidocs

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"html/template"
	"io/fs"
	"net/http"
	"path"

	"github.com/gin-gonic/gin"
)

// csp is the reference's Content-Security-Policy. Redoc styles its page
// with styled-components, which writes <style> elements at run time, so
// style-src allows inline styles; script-src allows this server's script
// only, never an inline one. Its search index runs in a worker the script
// starts from a blob: URL, which only script already running on the page
// can make. The sidebar's Redocly logo, an image on their CDN, is refused
// (Redoc then leaves it out).
const csp = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
	"connect-src 'self'; worker-src blob:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

//go:embed page.html assets/redoc.js assets/docs.css
var files embed.FS

// asset is an embedded script or stylesheet with its version (a hash of its
// content).
type asset struct {
	body        []byte
	contentType string
	version     string
}

var assets = func() map[string]asset {
	m := map[string]asset{}
	for _, name := range []string{"redoc.js", "docs.css"} {
		body, err := fs.ReadFile(files, "assets/"+name)
		if err != nil {
			panic(err) // embedded: a build without it does not compile
		}
		sum := sha256.Sum256(body)
		ct := "text/css; charset=utf-8"
		if path.Ext(name) == ".js" {
			ct = "text/javascript; charset=utf-8"
		}
		m[name] = asset{body: body, contentType: ct, version: hex.EncodeToString(sum[:6])}
	}
	return m
}()

var pageTemplate = template.Must(template.New("page.html").Funcs(template.FuncMap{
	"asset": func(name string) string { return "/docs/assets/" + name + "?v=" + assets[name].version },
}).ParseFS(files, "page.html"))

// Headers sets the security headers of the reference's page and assets.
func Headers(c *gin.Context) {
	h := c.Writer.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	c.Next()
}

// Page serves the reference's page, on which Redoc renders the OpenAPI
// document at specURL, a path of this server (the policy refuses any
// other).
func Page(specURL string) gin.HandlerFunc {
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, struct{ SpecURL string }{specURL}); err != nil {
		panic(err) // the template and its data are fixed: a test sees it
	}
	body := buf.Bytes()
	sum := sha256.Sum256(body)
	etag := `"` + hex.EncodeToString(sum[:6]) + `"`
	return func(c *gin.Context) {
		c.Header("Cache-Control", "no-cache")
		serve(c, etag, "text/html; charset=utf-8", body)
	}
}

// Asset serves an embedded script or stylesheet, named by the route's
// :file: for good when asked by its version, as the page does, and to be
// checked again otherwise; 404 not_found for any other name.
func Asset(c *gin.Context) {
	a, ok := assets[c.Param("file")]
	if !ok {
		c.AbortWithStatusJSON(http.StatusNotFound, gin.H{"error": "not_found", "detail": "no such asset"})
		return
	}
	if c.Query("v") == a.version {
		c.Header("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		c.Header("Cache-Control", "no-cache")
	}
	serve(c, `"`+a.version+`"`, a.contentType, a.body)
}

// serve answers body, or 304 when the browser holds it already.
func serve(c *gin.Context, etag, contentType string, body []byte) {
	c.Header("ETag", etag)
	if c.GetHeader("If-None-Match") == etag {
		c.Status(http.StatusNotModified)
		return
	}
	c.Data(http.StatusOK, contentType, body)
}
