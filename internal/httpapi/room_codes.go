package httpapi

import (
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/seckill/seckill/internal/room"
)

// handleCreateCodes makes priority codes for a SKU's waiting room and
// answers them, once: the server keeps only their hashes.
func handleCreateCodes(rooms Rooms, log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		id, err := pathID(c, "id")
		if err != nil {
			writeError(c, log, err)
			return
		}
		var req room.CodeCount
		if err := decodeJSON(c, &req); err != nil {
			writeError(c, log, err)
			return
		}
		codes, err := rooms.CreateCodes(c.Request.Context(), id, req.Count)
		if err != nil {
			writeError(c, log, err)
			return
		}
		c.Header("Cache-Control", "no-store")
		writeJSON(c, http.StatusCreated, codes)
	}
}

// handleCodeCounts answers how many priority codes a SKU's waiting room
// holds and how many were used.
func handleCodeCounts(rooms Rooms, log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		id, err := pathID(c, "id")
		if err != nil {
			writeError(c, log, err)
			return
		}
		codes, err := rooms.CodeCounts(c.Request.Context(), id)
		if err != nil {
			writeError(c, log, err)
			return
		}
		writeJSON(c, http.StatusOK, codes)
	}
}
