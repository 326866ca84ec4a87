// Package console is seckill's admin console: the pages an admin watches a
// sale on, served under /console by the same binary in every mode. It owns
// the console's login, sessions and CSRF tokens, its security headers, its
// pages (html/template, with a small script and stylesheet embedded in the
// binary) and its live feed (server-sent events).
//
// The console is only a view: the changes its pages make (a sale or a drop
// created, stock set, a sale ended, a dead letter requeued, a room paused)
// are calls of the admin API's own handlers, which httpapi mounts under
// /console/api behind the console's session instead of the bearer token,
// so their validation and their {"error","detail"} answers are the API's.
//
// Guarantees: the admin token is checked in constant time and never stored
// in the browser or in a cookie; a session is an HttpOnly, SameSite=Strict
// cookie (Secure when the request came over TLS) signed with a key derived
// from the admin token, accepted by every instance that has that token;
// every request that changes something carries the session's CSRF token;
// every answer under /console has a Content-Security-Policy that allows no
// inline script or style. The live feed costs one read of the stores per
// second per instance, whatever the number of consoles and buys.
package console

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/sale"
)

// Sales is what the console reads (sale.Service).
type Sales interface {
	AdminSKUs(ctx context.Context, after uint64, limit int) ([]sale.AdminSKUView, uint64, error)
	Queue(ctx context.Context, sku uint64, n int) (*sale.QueueReport, error)
	Audit(ctx context.Context, id uint64) (*sale.Report, error)
	// Drop is catalog.ErrDropNotFound for an id that is no drop's.
	Drop(ctx context.Context, id uint64) (*sale.DropView, error)
}

// Options configure a Console. Zero durations and counts take the
// defaults in brackets.
type Options struct {
	// Token is the admin token a login must give; empty turns the console
	// off (New refuses it).
	Token string
	// Receivers is the outbox's order-event receivers, for the order
	// events page; nil when events are off (no receiver configured).
	Receivers Receivers
	// SessionTTL is how long a login lasts [8h].
	SessionTTL time.Duration
	// Interval is how often the live feed reads the stores [1s];
	// AuditEvery how often it audits a watched sale [5s].
	Interval, AuditEvery time.Duration
	// MaxConsoles bounds the live feeds open at once on this instance
	// [64].
	MaxConsoles int
	// WriteTimeout is how long a console has to take each frame of its
	// live feed: one that does not is closed, and its place freed [10s].
	WriteTimeout time.Duration
	Now          func() time.Time
	Log          *slog.Logger
}

// Console serves the admin console.
type Console struct {
	sales     Sales
	receivers Receivers
	token     string
	sessions  *sessions
	failures  *failures
	feed      *feed
	pages     *pages
	// ctx ends with Close, and every live feed with it.
	ctx          context.Context
	cancel       context.CancelFunc
	writeTimeout time.Duration
	now          func() time.Time
	log          *slog.Logger
}

// New returns the console over sales. Close it when the server shuts down.
func New(sales Sales, o Options) (*Console, error) {
	if o.Token == "" {
		return nil, errors.New("console: no admin token: the console is off with the admin API")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	o.Log = cmp.Or(o.Log, slog.Default())
	p, err := newPages()
	if err != nil {
		return nil, err
	}
	interval := cmp.Or(o.Interval, time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	return &Console{
		sales:     sales,
		receivers: o.Receivers,
		token:     o.Token,
		sessions:  newSessions(o.Token, cmp.Or(o.SessionTTL, 8*time.Hour), o.Now),
		failures:  newFailures(10, time.Minute, o.Now),
		feed: newFeed(sales, feedOptions{
			Interval: interval, AuditEvery: cmp.Or(o.AuditEvery, 5*time.Second), Linger: 15 * time.Second,
			MaxSubscribers: cmp.Or(o.MaxConsoles, 64), MaxListed: 500, History: 3600, Now: o.Now, Log: o.Log,
		}),
		pages:        p,
		ctx:          ctx,
		cancel:       cancel,
		writeTimeout: cmp.Or(o.WriteTimeout, 10*time.Second),
		now:          o.Now,
		log:          o.Log,
	}, nil
}

// Close ends the live feeds, a write in progress to a console that stopped
// reading included, so that a server's graceful shutdown does not wait for
// them, and stops the sampler; it returns once the sampler has stopped.
// Register it with http.Server.RegisterOnShutdown, and call it again once
// the server has stopped, before the stores close.
func (c *Console) Close() {
	c.cancel()
	c.feed.close()
}

// Routes registers the console on g (/console): its pages, login, logout,
// live feed and assets, and on g's /api group, behind the session and its
// CSRF token, the admin routes api registers.
func (c *Console) Routes(g *gin.RouterGroup, api func(*gin.RouterGroup)) {
	g.Use(securityHeaders, sameOrigin)
	g.GET("/assets/:file", c.asset)
	g.GET("/login", c.loginPage)
	g.POST("/login", c.login)
	g.POST("/logout", c.guard(false), c.logout)
	g.GET("", c.guard(true), c.page("sales"))
	g.GET("/new", c.guard(true), c.page("new"))
	g.GET("/skus/:id", c.guard(true), c.salePage)
	g.GET("/drops/new", c.guard(true), c.page("newdrop"))
	g.GET("/drops/:id", c.guard(true), c.dropPage)
	g.GET("/receivers", c.guard(true), c.receiversPage)
	g.GET("/events", c.guard(false), c.events)
	api(g.Group("/api", c.guard(false)))
}

// sessionKey holds the request's session in the gin context.
const sessionKey = "console.session"

// guard lets through requests with a session; a page without one is sent
// to the login, anything else is 401. A request that may change something
// (not GET or HEAD) also needs the session's CSRF token, in the
// X-CSRF-Token header or the csrf_token form field: 403 without it.
func (c *Console) guard(page bool) gin.HandlerFunc {
	return func(ctx *gin.Context) {
		value, _ := ctx.Cookie(cookieName)
		ss, ok := c.sessions.check(value)
		if !ok {
			if page {
				ctx.Redirect(http.StatusSeeOther, "/console/login")
				ctx.Abort()
				return
			}
			refuse(ctx, http.StatusUnauthorized, "unauthorized", "log in to the console first: your session is missing or has expired")
			return
		}
		if m := ctx.Request.Method; m != http.MethodGet && m != http.MethodHead {
			got := ctx.GetHeader("X-CSRF-Token")
			if got == "" {
				got = ctx.PostForm("csrf_token")
			}
			if !c.sessions.validCSRF(ss, got) {
				refuse(ctx, http.StatusForbidden, "csrf_refused", "missing or wrong CSRF token: reload the page and try again")
				return
			}
		}
		ctx.Set(sessionKey, ss)
		ctx.Next()
	}
}

// refuse answers the console's own refusals in the API's error shape.
func refuse(ctx *gin.Context, status int, code, detail string) {
	ctx.AbortWithStatusJSON(status, gin.H{"error": code, "detail": detail})
}

// lookup reads SKU id's admin list entry: catalog.ErrNotFound when there is
// no such SKU.
func lookup(ctx context.Context, sales Sales, id uint64) (*sale.AdminSKUView, error) {
	views, _, err := sales.AdminSKUs(ctx, id-1, 1)
	if err != nil {
		return nil, err
	}
	if len(views) == 0 || views[0].ID != id {
		return nil, catalog.ErrNotFound
	}
	return &views[0], nil
}
