// Package httpapi is seckill's REST API: the shopper endpoints under /api/v1,
// the admin endpoints under /admin, the operational ones (/healthz,
// /readyz, /metrics) and the API reference (/docs). Every route is in routes.go; handlers take their
// dependencies as arguments; errors turn into HTTP status codes and the JSON
// body {"error": code, "detail": text} in one place (errors.go).
package httpapi

import (
	"cmp"
	"context"
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/seckill/seckill/internal/config"
)

// Deps is what the API needs from the rest of the program.
type Deps struct {
	Log      *slog.Logger
	HTTP     config.HTTP
	Registry *prometheus.Registry
	// Ready reports whether the backends answer; nil means always ready.
	Ready func(context.Context) error
	// Report, when set, adds to /readyz what an operator must see that does
	// not make the instance unready.
	Report func(context.Context) ReadyReport
	// Mode is "embedded" or "external", shown by /healthz.
	Mode    string
	Version string

	Shop  Shop  // nil: no shopper routes on orders
	Sales Sales // nil: no shopper routes on SKUs
	Rooms Rooms // nil: no waiting room routes
	Admin Admin // nil: no admin routes
	// Drops serves drops (nil: no drop routes); their rooms need Rooms.
	Drops Drops
	// RoomStreams serves the shoppers' streams of their room statuses,
	// at most MaxRoomStreams at once (default 10,000); nil: no stream
	// route.
	RoomStreams    RoomStreams
	MaxRoomStreams int
	// Closing ends when the server starts shutting down: the streams end
	// with it, so that they do not hold the shutdown up. Nil: never.
	Closing context.Context
	// Support serves the support endpoints on orders, under /admin with
	// the admin routes; nil: none.
	Support Support
	// Payments serves the payment notifications (with Webhooks), GET
	// /admin/payments and, in webhook mode, a shopper's pay; nil: none.
	Payments Payments
	// Console serves the admin console under /console, with the admin
	// routes; nil: none. It is off (403 admin_disabled) whenever the admin
	// API is.
	Console Console
	// Events serves GET /admin/events and POST
	// /admin/events/{id}/redeliver, under /admin with the admin routes;
	// nil: none.
	Events Events
	// PaymentMode is payment.mode: who marks an order paid, the payment
	// side's notification or the shopper's pay (trusted). In every mode
	// but trusted a shopper's pay answers the checkout.
	PaymentMode string
	// Webhooks verifies the payment notifications' signatures; nil: no
	// POST /webhooks/payments.
	Webhooks WebhookVerifier
	// Stripe reads Stripe's signed events (payment.mode stripe); nil: no
	// POST /webhooks/stripe.
	Stripe StripeEvents
	// Alipay verifies Alipay's notifications (payment.mode alipay); nil: no
	// POST /webhooks/alipay.
	Alipay NotificationVerifier
	// WeChatPay verifies WeChat Pay's notifications (payment.mode
	// wechatpay); nil: no POST /webhooks/wechatpay.
	WeChatPay NotificationVerifier
	// AdminToken guards /admin; empty turns the admin API off.
	AdminToken string
	// Tokens, when set, makes shoppers identify with a bearer token it
	// verifies instead of the X-User-ID header.
	Tokens TokenVerifier
	// TrustedProxies are the addresses whose X-Forwarded-For is believed
	// when finding a client's address (order.PlaceInput.Client, which the
	// per-address rate limit counts).
	TrustedProxies []string
}

// Console is the admin console (internal/console): Routes registers its
// pages, login and live feed on g, and calls api to register the admin
// routes on sales, which its pages call, on a group of its own behind its
// session.
type Console interface {
	Routes(g *gin.RouterGroup, api func(*gin.RouterGroup))
}

// New returns the API's handler.
func New(d Deps) http.Handler {
	d.Log = cmp.Or(d.Log, slog.Default())
	if d.Registry == nil {
		d.Registry = prometheus.NewRegistry()
	}
	gin.SetMode(d.HTTP.GinMode)
	r := gin.New()
	r.HandleMethodNotAllowed = true
	// A path with a trailing slash is 404 not_found, as any unknown path,
	// not a redirect a JSON client would have to follow.
	r.RedirectTrailingSlash = false
	r.ContextWithFallback = true
	// Client addresses come from the socket unless it is a trusted proxy.
	if err := r.SetTrustedProxies(d.TrustedProxies); err != nil {
		d.Log.Warn("ignoring trusted proxies", "err", err.Error())
		_ = r.SetTrustedProxies(nil)
	}
	r.NoRoute(func(c *gin.Context) { writeError(c, d.Log, errNotFound) })
	r.NoMethod(func(c *gin.Context) { writeError(c, d.Log, errMethodNotAllowed) })

	m := newHTTPMetrics(d.Registry)
	r.Use(requestID(), recovery(d.Log), accessLog(d.Log), observe(m))
	if len(d.HTTP.CORSOrigins) > 0 {
		r.Use(cors(d.HTTP.CORSOrigins))
	}
	if d.HTTP.MaxBodyBytes > 0 {
		r.Use(limitBody(d.HTTP.MaxBodyBytes))
	}
	routes(r, d, m)
	return r
}

// NewServer returns an http.Server for h with the configured timeouts.
func NewServer(cfg config.HTTP, h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Addr:              cfg.Addr,
		Handler:           h,
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		ReadTimeout:       cfg.ReadTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}
