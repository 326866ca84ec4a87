package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/seckill/seckill/internal/room"
)

// Rooms is what the waiting room endpoints need (internal/room).
type Rooms interface {
	Join(ctx context.Context, sku uint64, user string) (room.Status, error)
	Peek(ctx context.Context, sku uint64, user string) (room.Status, error)
	Published(ctx context.Context, sku uint64) (*room.Draw, error)
}

// handleRoom answers a shopper's place in a SKU's waiting room, joining it
// first (POST) or not (GET), with Retry-After: when to look again.
func handleRoom(visit func(ctx context.Context, sku uint64, user string) (room.Status, error), log *slog.Logger) shopperHandler {
	return func(c *gin.Context, user string) {
		id, err := pathID(c, "id")
		if err != nil {
			writeError(c, log, err)
			return
		}
		st, err := visit(c.Request.Context(), id, user)
		if err != nil {
			writeError(c, log, err)
			return
		}
		c.Header("Retry-After", strconv.FormatInt(max((st.RetryAfterMS+999)/1000, 1), 10))
		c.JSON(http.StatusOK, st)
	}
}

func handleDraw(rooms Rooms, log *slog.Logger) gin.HandlerFunc {
	return skuAction(rooms.Published, log)
}
