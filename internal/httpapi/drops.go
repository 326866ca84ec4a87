package httpapi

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/sale"
)

// Drops is what the drop endpoints need (internal/sale).
type Drops interface {
	Drop(ctx context.Context, id uint64) (*sale.DropView, error)
	// IsDrop is nil when id is a drop's, catalog.ErrDropNotFound
	// otherwise.
	IsDrop(ctx context.Context, id uint64) error
	CreateDrop(ctx context.Context, spec catalog.DropSpec) (*sale.DropView, bool, error)
}

// dropRoutes registers the shopper routes of drops on api: a drop's own,
// and its waiting room's, which are its first SKU's room (whose id is the
// drop's) served by the SKU room's handlers once the id is known to be a
// drop's.
func dropRoutes(api *gin.RouterGroup, d Deps, room func(g *gin.RouterGroup)) {
	api.GET("/drops/:id", skuAction(d.Drops.Drop, d.Log))
	room(api.Group("/drops/:id", dropOnly(d.Drops, d.Log)))
}

// dropOnly answers 404 unknown_drop for an id that is no drop's.
func dropOnly(drops Drops, log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		id, err := pathID(c, "id")
		if err == nil {
			err = drops.IsDrop(c.Request.Context(), id)
		}
		if err != nil {
			writeError(c, log, err)
			c.Abort()
			return
		}
		c.Next()
	}
}

// handleCreateDrop creates a drop: 201 with it, or 200 for the same drop
// given again.
func handleCreateDrop(drops Drops, log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		var spec catalog.DropSpec
		if err := decodeJSON(c, &spec); err != nil {
			writeError(c, log, err)
			return
		}
		v, created, err := drops.CreateDrop(c.Request.Context(), spec)
		if err != nil {
			writeError(c, log, err)
			return
		}
		status := http.StatusOK
		if created {
			status = http.StatusCreated
		}
		c.JSON(status, v)
	}
}
