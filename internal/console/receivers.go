package console

import (
	"context"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/seckill/seckill/internal/outbox"
)

// Receivers is what the order events page reads (outbox.Admin, as GET
// /admin/events/receivers answers it): every receiver's backlog, in name
// order.
type Receivers interface {
	Receivers(ctx context.Context) ([]outbox.Backlog, error)
}

// receiversPage serves the order events page: each receiver's backlog,
// read from the outbox once per load. With events off it says so; a store
// that does not answer is said on the page, which is still served.
func (c *Console) receiversPage(ctx *gin.Context) {
	d := pageData{Title: "Order events", ReadAt: c.now()}
	if c.receivers == nil {
		d.EventsOff = true
		c.render(ctx, http.StatusOK, "receivers", d)
		return
	}
	rs, err := c.receivers.Receivers(ctx.Request.Context())
	if err != nil {
		if ctx.Request.Context().Err() == nil { // not a browser that left the page
			c.log.Warn("console: read the receivers' backlog", "err", err.Error())
		}
		d.Error = "The receivers' backlog could not be read from the SQL store just now; reload in a moment."
		rs = nil
	}
	d.Receivers = rs
	c.render(ctx, http.StatusOK, "receivers", d)
}

// age writes the age of a receiver's oldest pending event, given in
// seconds: "–" when none, to the millisecond under a second, else to the
// second.
func age(seconds float64) string {
	if seconds <= 0 {
		return "–"
	}
	d := time.Duration(seconds * float64(time.Second))
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
