package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/seckill/seckill/internal/outbox"
)

// Events is what the admin endpoints on order events need: the outbox by
// status, and sending an event again.
type Events interface {
	List(ctx context.Context, status string, after uint64, limit int) ([]outbox.View, uint64, error)
	Redeliver(ctx context.Context, eventID string) (outbox.View, error)
}

// eventStatuses are the values of GET /admin/events?status=.
var eventStatuses = []string{outbox.StatusPending, outbox.StatusDead, outbox.StatusDelivered}

// An event id is evt_ and letters, digits or _ - . : @, at most
// maxEventIDLen bytes in all.
const (
	eventIDPrefix = "evt_"
	eventIDChars  = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.:@"
	maxEventIDLen = 128
)

func validEventID(id string) bool {
	rest, ok := strings.CutPrefix(id, eventIDPrefix)
	return ok && rest != "" && len(id) <= maxEventIDLen && strings.Trim(rest, eventIDChars) == ""
}

var errEventID = invalid("an event id is evt_ followed by letters, digits or _ - . : @, at most " +
	strconv.Itoa(maxEventIDLen) + " bytes")

// handleListEvents lists the outbox's events with a status (pending by
// default), oldest first.
func handleListEvents(ev Events, log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		status := outbox.StatusPending
		after, limit, err := eventPageQuery(c)
		if s, ok := c.GetQuery("status"); ok && err == nil {
			if !slices.Contains(eventStatuses, s) {
				err = invalid("status must be one of " + strings.Join(eventStatuses, ", "))
			}
			status = s
		}
		var items []outbox.View
		var next uint64
		if err == nil {
			items, next, err = ev.List(c.Request.Context(), status, after, limit)
		}
		if err != nil {
			writeError(c, log, err)
			return
		}
		if items == nil {
			items = []outbox.View{}
		}
		writeJSON(c, http.StatusOK, page[outbox.View]{Items: items, NextCursor: encodeCursor(next)})
	}
}

// eventPageQuery reads the limit (1 to outbox.MaxPage) and cursor of a page
// of events; the cursor is the one of the other lists by id.
func eventPageQuery(c *gin.Context) (after uint64, limit int, err error) {
	limit = defaultLimit
	if s, ok := c.GetQuery("limit"); ok {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > outbox.MaxPage {
			return 0, 0, invalid("limit must be an integer from 1 to " + strconv.Itoa(outbox.MaxPage))
		}
		limit = n
	}
	if s, ok := c.GetQuery("cursor"); ok {
		if after, ok = decodeCursor(s); !ok {
			return 0, 0, errCursor
		}
	}
	return after, limit, nil
}

// handleRedeliver sends an event again now, whatever its status, and
// answers it.
func handleRedeliver(ev Events, log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		id := c.Param("id")
		if !validEventID(id) {
			writeError(c, log, errEventID)
			return
		}
		v, err := ev.Redeliver(c.Request.Context(), id)
		if err != nil {
			writeError(c, log, err)
			return
		}
		writeJSON(c, http.StatusOK, v)
	}
}
