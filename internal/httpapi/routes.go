package httpapi

import (
	"cmp"
	"context"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/seckill/seckill/internal/apidocs"
	"github.com/seckill/seckill/internal/config"
)

// routes registers every route of the API.
func routes(r *gin.Engine, d Deps, m *httpMetrics) {
	r.GET("/healthz", handleHealthz(d.Mode, d.Version))
	r.GET("/readyz", handleReadyz(d.Ready, d.Report, d.Log))
	r.GET("/metrics", gin.WrapH(promhttp.HandlerFor(d.Registry, promhttp.HandlerOpts{})))
	r.GET("/openapi.json", handleOpenAPI(d.Log))
	r.GET("/", handleFrontDoor(d.Admin != nil && d.AdminToken != "" && d.Console != nil))
	docs := r.Group("/docs", apidocs.Headers)
	docs.GET("", apidocs.Page("/openapi.json"))
	docs.GET("/assets/:file", apidocs.Asset)

	api := r.Group("/api/v1")
	if d.Sales != nil {
		api.GET("/skus", handleListSKUs(d.Sales, d.Log))
		api.GET("/skus/:id", handleGetSKU(d.Sales, d.Log))
	}
	if d.Shop != nil {
		as := shopper(d.Tokens, d.Log)
		api.POST("/orders", as(handlePlaceOrder(d.Shop, m.buys, d.Log)))
		api.GET("/orders", as(handleListOrders(d.Shop, d.Log)))
		api.GET("/orders/:order_id", as(handleGetOrder(d.Shop, d.Log)))
		if d.PaymentMode != config.PaymentTrusted && d.Payments != nil {
			// Only the payment side's notification marks an order paid.
			api.POST("/orders/:order_id/pay", as(handleCheckout(d.Payments, d.Log)))
		} else {
			api.POST("/orders/:order_id/pay", as(handlePay(d.Shop, d.Log)))
		}
		api.POST("/orders/:order_id/cancel", as(handleCancel(d.Shop, d.Log)))
	}
	if d.Rooms != nil {
		as := shopper(d.Tokens, d.Log)
		var stream gin.HandlerFunc
		if d.RoomStreams != nil {
			open := &streams{max: cmp.Or(d.MaxRoomStreams, 10_000), open: map[streamKey]*streamSlot{}}
			// An event has as long as an answer to be written.
			stream = as(handleRoomStream(cmp.Or(d.Closing, context.Background()), d.RoomStreams, open,
				cmp.Or(d.HTTP.WriteTimeout, 10*time.Second), d.Log))
		}
		room := func(g *gin.RouterGroup) {
			g.POST("/queue", as(handleRoom(join(d.Rooms), d.Log)))
			g.GET("/queue", as(handleRoom(peek(d.Rooms), d.Log)))
			g.GET("/queue/challenge", as(handleChallenge(d.Rooms, d.Log)))
			if stream != nil {
				g.GET("/queue/events", stream)
			}
			g.GET("/draw", handleDraw(d.Rooms, d.Log))
		}
		room(api.Group("/skus/:id"))
		if d.Drops != nil {
			dropRoutes(api, d, room)
		}
	}
	if d.Payments != nil && d.Webhooks != nil {
		r.POST("/webhooks/payments", handlePaymentWebhook(d.Payments, d.Webhooks, d.Log))
	}
	if d.Payments != nil && d.Stripe != nil {
		r.POST("/webhooks/stripe", handleStripeWebhook(d.Payments, d.Stripe, d.Log))
	}
	if d.Payments != nil && d.Alipay != nil {
		r.POST("/webhooks/alipay", handleAlipay(d.Payments, d.Alipay, d.Log))
	}
	if d.Payments != nil && d.WeChatPay != nil {
		r.POST("/webhooks/wechatpay", handleWeChatPay(d.Payments, d.WeChatPay, d.Log))
	}
	if d.Admin != nil {
		admin := r.Group("/admin", adminOnly(d.AdminToken, d.Log))
		skuAdmin(admin, d)
		if d.Support != nil {
			admin.GET("/orders", handleSupportList(d.Support, d.Log))
			admin.GET("/orders/:order_id", handleSupportGet(d.Support, d.Log))
			admin.POST("/orders/:order_id/cancel", handleSupportCancel(d.Support, d.Log))
		}
		if d.Payments != nil {
			admin.GET("/payments", handleListPayments(d.Payments, d.Log))
		}
		if d.Events != nil {
			admin.GET("/events", handleListEvents(d.Events, d.Log))
			admin.GET("/events/receivers", handleEventReceivers(d.Events, d.Log))
			admin.POST("/events/:id/redeliver", handleRedeliver(d.Events, d.Log))
		}
		switch {
		case d.AdminToken == "":
			// The console is off with the admin API, and says so.
			off := adminOnly("", d.Log)
			r.Any("/console", off)
			r.Any("/console/*path", off)
		case d.Console != nil:
			// The console's own calls are the admin API's handlers, behind
			// its session instead of the bearer token.
			d.Console.Routes(r.Group("/console"), func(g *gin.RouterGroup) { skuAdmin(g, d) })
		}
	}
}

// skuAdmin registers the admin routes on sales on g: under /admin, and
// under /console/api for the console.
func skuAdmin(g *gin.RouterGroup, d Deps) {
	g.GET("/skus", handleAdminListSKUs(d.Admin, d.Log))
	g.POST("/skus", handleUpsertSKU(d.Admin, d.Log))
	g.POST("/seed", handleSeed(d.Admin, d.Log))
	g.PATCH("/skus/:id", handlePatchSKU(d.Admin, d.Log))
	g.POST("/skus/:id/end", handleEndSale(d.Admin, d.Log))
	g.PUT("/skus/:id/stock", handleSetStock(d.Admin, d.Log))
	g.GET("/skus/:id/audit", handleAudit(d.Admin, d.Log))
	g.POST("/skus/:id/reconcile", handleReconcile(d.Admin, d.Log))
	g.GET("/skus/:id/queue", handleQueue(d.Admin, d.Log))
	g.GET("/skus/:id/dead", handleDeadLetters(d.Admin, d.Log))
	g.POST("/skus/:id/dead/:task_id/requeue", handleDeadLetter(d.Log, "requeued", d.Admin.RequeueDead))
	g.DELETE("/skus/:id/dead/:task_id", handleDeadLetter(d.Log, "deleted", d.Admin.DeleteDead))
	if d.Rooms != nil {
		room := func(g *gin.RouterGroup) {
			g.GET("/room", handleRoomControls(d.Rooms, d.Log))
			g.POST("/room", handleRoomControl(d.Rooms, d.Log))
			g.GET("/room/codes", handleCodeCounts(d.Rooms, d.Log))
			g.POST("/room/codes", handleCreateCodes(d.Rooms, d.Log))
		}
		room(g.Group("/skus/:id"))
		if d.Drops != nil {
			room(g.Group("/drops/:id", dropOnly(d.Drops, d.Log)))
		}
	}
	if d.Drops != nil {
		g.POST("/drops", handleCreateDrop(d.Drops, d.Log))
	}
}
