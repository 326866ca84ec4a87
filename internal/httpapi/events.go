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

// Events is what the admin endpoints on order events need: the deliveries
// of the outbox by status and receiver (every receiver for ""), each
// receiver's backlog, and sending an event again, to one receiver or to
// every one.
type Events interface {
	List(ctx context.Context, status, receiver string, after uint64, limit int) ([]outbox.View, uint64, error)
	Receivers(ctx context.Context) ([]outbox.Backlog, error)
	Redeliver(ctx context.Context, eventID, receiver string) ([]outbox.View, error)
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

// A receiver's name is 1 to maxReceiverLen printable ASCII characters, no
// space (internal/config names receivers so).
const maxReceiverLen = 128

var errReceiver = invalid("receiver must be a receiver's name: 1 to " + strconv.Itoa(maxReceiverLen) +
	" printable ASCII characters, no space")

// receiverQuery reads the receiver query parameter: "" when absent.
func receiverQuery(c *gin.Context) (string, error) {
	s, ok := c.GetQuery("receiver")
	if !ok {
		return "", nil
	}
	if s == "" || len(s) > maxReceiverLen {
		return "", errReceiver
	}
	for i := range len(s) {
		if s[i] <= ' ' || s[i] > '~' {
			return "", errReceiver
		}
	}
	return s, nil
}

// handleListEvents lists the outbox's deliveries with a status (pending by
// default), to a receiver or to every one, in the order they were made.
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
		var receiver string
		if err == nil {
			receiver, err = receiverQuery(c)
		}
		var items []outbox.View
		var next uint64
		if err == nil {
			items, next, err = ev.List(c.Request.Context(), status, receiver, after, limit)
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

// handleEventReceivers lists every receiver's backlog: its events pending,
// delivered and dead, and the age of its oldest pending one.
func handleEventReceivers(ev Events, log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		items, err := ev.Receivers(c.Request.Context())
		if err != nil {
			writeError(c, log, err)
			return
		}
		if items == nil {
			items = []outbox.Backlog{}
		}
		writeJSON(c, http.StatusOK, page[outbox.Backlog]{Items: items})
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

// handleRedeliver sends an event again now, whatever its status, to the
// receiver named or to every one, and answers the deliveries made pending.
func handleRedeliver(ev Events, log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		id := c.Param("id")
		if !validEventID(id) {
			writeError(c, log, errEventID)
			return
		}
		receiver, err := receiverQuery(c)
		if err != nil {
			writeError(c, log, err)
			return
		}
		vs, err := ev.Redeliver(c.Request.Context(), id, receiver)
		if err != nil {
			writeError(c, log, err)
			return
		}
		if vs == nil {
			vs = []outbox.View{}
		}
		writeJSON(c, http.StatusOK, page[outbox.View]{Items: vs})
	}
}
