package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"
)

// handleQueue reports the depths of a SKU's queue and its next pending
// tasks (?n=, default 20).
func handleQueue(admin Admin, log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		id, err := pathID(c, "id")
		var n int
		if err == nil {
			n, err = queryInt(c, "n", 20)
		}
		if err != nil {
			writeError(c, log, err)
			return
		}
		r, err := admin.Queue(c.Request.Context(), id, n)
		if err != nil {
			writeError(c, log, err)
			return
		}
		c.JSON(http.StatusOK, r)
	}
}

// handleDeadLetters lists a SKU's dead letters (?offset=, ?n=, default 100).
func handleDeadLetters(admin Admin, log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		id, err := pathID(c, "id")
		var offset, n int
		if err == nil {
			offset, err = queryInt(c, "offset", 0)
		}
		if err == nil {
			n, err = queryInt(c, "n", 100)
		}
		if err != nil {
			writeError(c, log, err)
			return
		}
		list, err := admin.DeadLetters(c.Request.Context(), id, offset, n)
		if err != nil {
			writeError(c, log, err)
			return
		}
		c.JSON(http.StatusOK, gin.H{"sku_id": id, "offset": offset, "dead": list})
	}
}

// handleDeadLetter applies act (Admin.RequeueDead or Admin.DeleteDead) to
// one dead letter and answers with its id and status.
func handleDeadLetter(log *slog.Logger, status string, act func(ctx context.Context, sku uint64, id string) error) gin.HandlerFunc {
	return func(c *gin.Context) {
		id, err := pathID(c, "id")
		if err == nil {
			err = act(c.Request.Context(), id, c.Param("task_id"))
		}
		if err != nil {
			writeError(c, log, err)
			return
		}
		c.JSON(http.StatusOK, gin.H{"task_id": c.Param("task_id"), "status": status})
	}
}

// queryInt parses an optional non-negative integer query parameter.
func queryInt(c *gin.Context, name string, def int) (int, error) {
	v := c.Query(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 1_000_000 {
		return 0, invalid(name + " must be a non-negative integer")
	}
	return n, nil
}
