package console

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/seckill/seckill/internal/catalog"
)

// dropPage serves a drop's page: its SKUs with the units left of each,
// read once, and its waiting room's settings; the script steers the room.
// 404 for an id that is no drop's.
func (c *Console) dropPage(ctx *gin.Context) {
	missing := pageData{Title: "No such drop", Error: "There is no drop with this id."}
	id, err := strconv.ParseUint(ctx.Param("id"), 10, 64)
	if err != nil || !catalog.ValidID(id) {
		c.render(ctx, http.StatusNotFound, "missing", missing)
		return
	}
	d, err := c.sales.Drop(ctx.Request.Context(), id)
	switch {
	case errors.Is(err, catalog.ErrDropNotFound):
		c.render(ctx, http.StatusNotFound, "missing", missing)
		return
	case err != nil:
		if ctx.Request.Context().Err() == nil { // not a browser that left the page
			c.log.Warn("console: read a drop", "drop", id, "err", err.Error())
		}
		c.render(ctx, http.StatusServiceUnavailable, "missing", pageData{Title: "Drop unavailable",
			Error: "The drop could not be read from the stores just now; reload in a moment."})
		return
	}
	c.render(ctx, http.StatusOK, "drop", pageData{Title: d.Name, Drop: d, ReadAt: c.now()})
}
