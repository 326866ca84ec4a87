package console

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/seckill/seckill/internal/catalog"
)

// heartbeat is how often an idle live feed sends a comment, so that
// proxies keep the connection open.
const heartbeat = 15 * time.Second

// events is the live feed of the sales page, or with ?sku=ID of one sale,
// as server-sent events: "sales" or "sale" frames every second, "audit"
// frames every few seconds, "history" (the chart so far) first, "problem"
// when the stores could not be read. It ends when the client goes, the
// session expires ("expired") or the server shuts down.
func (c *Console) events(ctx *gin.Context) {
	var sku uint64
	if v := ctx.Query("sku"); v != "" {
		id, err := strconv.ParseUint(v, 10, 64)
		if err != nil || !catalog.ValidID(id) {
			refuse(ctx, http.StatusBadRequest, "invalid_request", "sku must be a SKU id")
			return
		}
		sku = id
	}
	sub, err := c.feed.subscribe(sku)
	switch {
	case errors.Is(err, errFull):
		ctx.Header("Retry-After", "5")
		refuse(ctx, http.StatusServiceUnavailable, "busy", err.Error())
		return
	case err != nil:
		refuse(ctx, http.StatusServiceUnavailable, "unavailable", err.Error())
		return
	}
	defer c.feed.unsubscribe(sub)
	ss := ctx.MustGet(sessionKey).(session)

	// A stream outlives the server's read and write timeouts, which are
	// for requests and answers.
	rc := http.NewResponseController(ctx.Writer)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	h := ctx.Writer.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	ctx.Status(http.StatusOK)
	w := ctx.Writer
	if _, err := fmt.Fprint(w, "retry: 2000\n\n"); err != nil {
		return
	}
	w.Flush()
	beat := time.NewTicker(heartbeat)
	defer beat.Stop()
	expired := time.NewTimer(ss.expires.Sub(c.now()))
	defer expired.Stop()
	for {
		var err error
		select {
		case <-ctx.Request.Context().Done():
			return
		case <-c.closing:
			return
		case <-expired.C:
			_, _ = fmt.Fprint(w, "event: expired\ndata: {}\n\n")
			w.Flush()
			return
		case fr := <-sub.frames:
			_, err = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", fr.event, fr.data)
		case <-beat.C:
			_, err = fmt.Fprint(w, ": ping\n\n")
		}
		if err != nil {
			return
		}
		w.Flush()
	}
}
