package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/outbox"
	"github.com/seckill/seckill/internal/sale"
	"github.com/seckill/seckill/internal/seedfile"
)

// The pages are html/template files; the script and stylesheet they load
// are built by `make console` (internal/console/web) into assets/ and
// embedded as they are committed.
//
//go:embed templates/*.html assets/console.js assets/console.css
var files embed.FS

// pages holds the parsed templates and the embedded assets with their
// versions (a hash of their content, in their URLs, so a browser may keep
// them for good).
type pages struct {
	templates map[string]*template.Template
	assets    map[string]asset
}

type asset struct {
	body        []byte
	contentType string
	version     string
}

var pageNames = []string{"login", "sales", "new", "sale", "missing", "receivers", "newdrop", "drop"}

func newPages() (*pages, error) {
	p := &pages{templates: map[string]*template.Template{}, assets: map[string]asset{}}
	for _, name := range []string{"console.js", "console.css"} {
		body, err := fs.ReadFile(files, "assets/"+name)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(body)
		ct := "text/css; charset=utf-8"
		if path.Ext(name) == ".js" {
			ct = "text/javascript; charset=utf-8"
		}
		p.assets[name] = asset{body: body, contentType: ct, version: hex.EncodeToString(sum[:6])}
	}
	funcs := template.FuncMap{
		"asset": func(name string) (string, error) {
			a, ok := p.assets[name]
			if !ok {
				return "", fmt.Errorf("console: no asset %q", name)
			}
			return "/console/assets/" + name + "?v=" + a.version, nil
		},
		"when": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05") },
		"ttl":  func(d catalog.TTL) string { return time.Duration(d).String() },
		"age":  age,
	}
	for _, name := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(files, "templates/layout.html", "templates/parts.html", "templates/"+name+".html")
		if err != nil {
			return nil, err
		}
		p.templates[name] = t
	}
	return p, nil
}

// pageData is what a page's template reads.
type pageData struct {
	Title string
	Page  string // the body's data-page: which script runs
	CSRF  string // empty on the login page
	// Error is the login page's message, or the problem a page had
	// reading the stores.
	Error string
	// SKU is the sale page's SKU.
	SKU *sale.AdminSKUView
	// Drop is the drop page's drop, read at ReadAt.
	Drop *sale.DropView
	// Columns are the seed file's CSV columns, for the create page.
	Columns []string
	// Receivers are the order events page's receivers, read at ReadAt;
	// EventsOff is set when events are off.
	Receivers []outbox.Backlog
	EventsOff bool
	ReadAt    time.Time
}

// render writes page name with status. Pages are never cached: they hold
// the session's CSRF token.
func (c *Console) render(ctx *gin.Context, status int, name string, d pageData) {
	d.Page = name
	if v, ok := ctx.Get(sessionKey); ok {
		d.CSRF = c.sessions.csrf(v.(session))
	}
	var buf bytes.Buffer
	if err := c.pages.templates[name].Execute(&buf, d); err != nil {
		c.log.Error("console: render page", "page", name, "err", err.Error())
		ctx.String(http.StatusInternalServerError, "internal error")
		return
	}
	ctx.Header("Cache-Control", "no-store")
	ctx.Data(status, "text/html; charset=utf-8", buf.Bytes())
}

// page serves a page that needs nothing but the session.
func (c *Console) page(name string) gin.HandlerFunc {
	titles := map[string]string{"sales": "Sales", "new": "Create a sale", "newdrop": "Create a drop"}
	return func(ctx *gin.Context) {
		c.render(ctx, http.StatusOK, name, pageData{Title: titles[name], Columns: seedfile.Columns})
	}
}

// salePage serves one sale's live page; 404 for a SKU that does not exist.
func (c *Console) salePage(ctx *gin.Context) {
	id, err := strconv.ParseUint(ctx.Param("id"), 10, 64)
	if err != nil || !catalog.ValidID(id) {
		c.render(ctx, http.StatusNotFound, "missing", pageData{Title: "No such sale"})
		return
	}
	v, err := lookup(ctx.Request.Context(), c.sales, id)
	switch {
	case errors.Is(err, catalog.ErrNotFound):
		c.render(ctx, http.StatusNotFound, "missing", pageData{Title: "No such sale"})
		return
	case err != nil:
		if ctx.Request.Context().Err() == nil { // not a browser that left the page
			c.log.Warn("console: read a sale", "sku", id, "err", err.Error())
		}
		c.render(ctx, http.StatusServiceUnavailable, "missing", pageData{Title: "Sale unavailable",
			Error: "The sale could not be read from the stores just now; reload in a moment."})
		return
	}
	c.render(ctx, http.StatusOK, "sale", pageData{Title: v.Name, SKU: v})
}

// asset serves an embedded script or stylesheet: for good when asked by
// its version, as the pages do.
func (c *Console) asset(ctx *gin.Context) {
	a, ok := c.pages.assets[ctx.Param("file")]
	if !ok {
		refuse(ctx, http.StatusNotFound, "not_found", "no such asset")
		return
	}
	if ctx.Query("v") == a.version {
		ctx.Header("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		ctx.Header("Cache-Control", "no-cache")
	}
	ctx.Header("ETag", `"`+a.version+`"`)
	if ctx.GetHeader("If-None-Match") == `"`+a.version+`"` {
		ctx.Status(http.StatusNotModified)
		return
	}
	ctx.Data(http.StatusOK, a.contentType, a.body)
}
