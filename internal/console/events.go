package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/streamwrite"
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
	// for requests and answers: each frame has a write deadline of its
	// own instead, and the console's close ends a write in progress.
	dl := streamwrite.New(ctx.Writer, c.writeTimeout)
	stop := context.AfterFunc(c.ctx, dl.Expire)
	defer func() {
		stop()
		dl.Finish()
	}()
	h := ctx.Writer.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	ctx.Status(http.StatusOK)
	w := ctx.Writer
	if !dl.Send(w, []byte("retry: 2000\n\n")) {
		return
	}
	beat := time.NewTicker(heartbeat)
	defer beat.Stop()
	expired := time.NewTimer(ss.expires.Sub(c.now()))
	defer expired.Stop()
	var buf []byte // the frame being written, kept for the next
	for {
		last := false
		select {
		case <-ctx.Request.Context().Done():
			return
		case <-c.ctx.Done():
			dl.Expire()
			return
		case <-expired.C:
			buf, last = append(buf[:0], "event: expired\ndata: {}\n\n"...), true
		case fr := <-sub.frames:
			buf = fmt.Appendf(buf[:0], "event: %s\ndata: %s\n\n", fr.event, fr.data)
		case <-beat.C:
			buf = append(buf[:0], ": ping\n\n"...)
		}
		// A console that does not take the frame in time is closed, and
		// its place freed: the failed write cancels the request.
		if !dl.Send(w, buf) {
			return
		}
		if last {
			return
		}
	}
}
