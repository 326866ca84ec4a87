package httpapi

import (
	"encoding/base64"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/order"
	"github.com/seckill/seckill/internal/sale"
)

// Pages of a list: limit items (1 to maxLimit, defaultLimit when absent)
// after an opaque cursor, the next_cursor of the page before.
const (
	defaultLimit = 20
	maxLimit     = 100
)

// page is one page of a list and the cursor of the next, "" after the last.
type page[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"next_cursor,omitempty"`
}

// writePage answers 200 with items, an empty list rather than null when
// there are none, and the cursor of the next page.
func writePage[T any](c *gin.Context, items []T, next string) {
	if items == nil {
		items = []T{}
	}
	c.JSON(http.StatusOK, page[T]{Items: items, NextCursor: next})
}

// limitQuery reads the limit query parameter.
func limitQuery(c *gin.Context) (int, error) {
	s, ok := c.GetQuery("limit")
	if !ok {
		return defaultLimit, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > maxLimit {
		return 0, invalid("limit must be an integer from 1 to " + strconv.Itoa(maxLimit))
	}
	return n, nil
}

// errCursor is a cursor this API did not give.
var errCursor = invalid("cursor is not one this API gave (use next_cursor of the previous page)")

// pageQuery reads the limit and cursor query parameters: the id to list
// after and the number of items. Anything else is invalid_request.
func pageQuery(c *gin.Context) (after uint64, limit int, err error) {
	if limit, err = limitQuery(c); err != nil {
		return 0, 0, err
	}
	if s, ok := c.GetQuery("cursor"); ok {
		if after, ok = decodeCursor(s); !ok {
			return 0, 0, errCursor
		}
	}
	return after, limit, nil
}

// A cursor names the last id of a page, base64url-encoded so that clients
// treat it as opaque.
func encodeCursor(after uint64) string {
	if after == 0 {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString([]byte("sku:" + strconv.FormatUint(after, 10)))
}

// decodeCursor reads a cursor encodeCursor gave: exactly its text, for an id
// a list can hold (1 to catalog.MaxID); false for anything else.
func decodeCursor(s string) (uint64, bool) {
	if len(s) > 64 {
		return 0, false
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return 0, false
	}
	digits, ok := strings.CutPrefix(string(b), "sku:")
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseUint(digits, 10, 64)
	if err != nil || !catalog.ValidID(id) || encodeCursor(id) != s {
		return 0, false
	}
	return id, true
}

// defaultStates are the sales a shop front lists unless it asks otherwise:
// a sold-out sale stays listed, as sold out (a cancel or an expiry can put
// units back on sale); an ended one does not.
var defaultStates = []string{catalog.Upcoming, catalog.Live, catalog.SoldOut}

// stateQuery reads the state filter: a comma-separated list of states (the
// parameter given twice adds to it).
func stateQuery(c *gin.Context) ([]string, error) {
	values, ok := c.GetQueryArray("state")
	if !ok {
		return defaultStates, nil
	}
	var states []string
	for _, st := range strings.Split(strings.Join(values, ","), ",") {
		switch st {
		case catalog.Upcoming, catalog.Live, catalog.SoldOut, catalog.Ended:
			states = append(states, st)
		default:
			return nil, invalid("state must be a comma-separated list of upcoming, live, sold_out, ended")
		}
	}
	return states, nil
}

func handleListSKUs(sales Sales, log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		states, err := stateQuery(c)
		if err != nil {
			writeError(c, log, err)
			return
		}
		after, limit, err := pageQuery(c)
		if err != nil {
			writeError(c, log, err)
			return
		}
		items, next, err := sales.ListSKUs(c.Request.Context(), states, after, limit)
		if err != nil {
			writeError(c, log, err)
			return
		}
		c.JSON(http.StatusOK, page[sale.SKUView]{Items: items, NextCursor: encodeCursor(next)})
	}
}

func handleAdminListSKUs(admin Admin, log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		after, limit, err := pageQuery(c)
		if err != nil {
			writeError(c, log, err)
			return
		}
		items, next, err := admin.AdminSKUs(c.Request.Context(), after, limit)
		if err != nil {
			writeError(c, log, err)
			return
		}
		writePage(c, items, encodeCursor(next))
	}
}

func handleEndSale(admin Admin, log *slog.Logger) gin.HandlerFunc {
	return skuAction(admin.EndSale, log)
}

// An order cursor names the last order of a page by its creation time (Unix
// ms) and id.
func encodeOrderCursor(c *order.Cursor) string {
	if c == nil {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString([]byte("order:" + strconv.FormatInt(c.CreatedMS, 10) + ":" + c.OrderID))
}

// decodeOrderCursor reads a cursor encodeOrderCursor gave: exactly its
// text, naming a place a list of orders can continue from
// (order.Cursor.Valid); false for anything else.
func decodeOrderCursor(s string) (*order.Cursor, bool) {
	if len(s) > 160 {
		return nil, false
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, false
	}
	rest, ok := strings.CutPrefix(string(b), "order:")
	if !ok {
		return nil, false
	}
	ms, id, ok := strings.Cut(rest, ":")
	if !ok {
		return nil, false
	}
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return nil, false
	}
	c := &order.Cursor{CreatedMS: n, OrderID: id}
	if !c.Valid() || encodeOrderCursor(c) != s {
		return nil, false
	}
	return c, true
}

func handleListOrders(shop Shop, log *slog.Logger) shopperHandler {
	return func(c *gin.Context, user string) {
		limit, err := limitQuery(c)
		if err != nil {
			writeError(c, log, err)
			return
		}
		var cursor *order.Cursor
		if s, ok := c.GetQuery("cursor"); ok {
			if cursor, ok = decodeOrderCursor(s); !ok {
				writeError(c, log, errCursor)
				return
			}
		}
		items, next, err := shop.ListOrders(c.Request.Context(), user, cursor, limit)
		if err != nil {
			writeError(c, log, err)
			return
		}
		writePage(c, items, encodeOrderCursor(next))
	}
}
