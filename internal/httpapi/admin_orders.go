package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/order"
)

// Support is what the support endpoints on orders need: finding any order
// and cancelling it by hand.
type Support interface {
	SupportList(ctx context.Context, q order.SupportQuery, cursor *order.Cursor, limit int) ([]order.AdminView, *order.Cursor, error)
	SupportGet(ctx context.Context, orderID string) (*order.AdminView, error)
	SupportCancel(ctx context.Context, orderID, reason string) (*order.AdminView, error)
}

func handleSupportList(sup Support, log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		q, err := supportQuery(c)
		if err != nil {
			writeError(c, log, err)
			return
		}
		limit, err := limitQuery(c)
		if err != nil {
			writeError(c, log, err)
			return
		}
		cursor, err := orderCursorQuery(c)
		if err != nil {
			writeError(c, log, err)
			return
		}
		items, next, err := sup.SupportList(c.Request.Context(), q, cursor, limit)
		if err != nil {
			writeError(c, log, err)
			return
		}
		if items == nil {
			items = []order.AdminView{}
		}
		writeJSON(c, http.StatusOK, page[order.AdminView]{Items: items, NextCursor: encodeOrderCursor(next)})
	}
}

// supportQuery reads the filters of GET /admin/orders: sku_id, user_id,
// payment_reference and status, a comma-separated list of statuses (the parameter given twice
// adds to it).
func supportQuery(c *gin.Context) (order.SupportQuery, error) {
	var q order.SupportQuery
	if s, ok := c.GetQuery("sku_id"); ok {
		id, err := strconv.ParseUint(s, 10, 64)
		if err != nil || !catalog.ValidID(id) {
			return q, errSKUID("sku_id")
		}
		q.SKU = id
	}
	if s, ok := c.GetQuery("user_id"); ok {
		if !order.ValidUserID(s) {
			return q, invalid("user_id must be 1 to " + strconv.Itoa(order.MaxUserIDLen) + " letters, digits or - _ . : @")
		}
		q.User = s
	}
	if s, ok := c.GetQuery("payment_reference"); ok {
		if s == "" {
			return q, invalid("payment_reference must be an order's payment reference")
		}
		q.PaymentReference = s
	}
	if values, ok := c.GetQueryArray("status"); ok {
		q.Statuses = strings.Split(strings.Join(values, ","), ",")
	}
	return q, q.Validate()
}

// orderCursorQuery reads the cursor of a list of orders; nil when absent.
func orderCursorQuery(c *gin.Context) (*order.Cursor, error) {
	s, ok := c.GetQuery("cursor")
	if !ok {
		return nil, nil
	}
	cursor, ok := decodeOrderCursor(s)
	if !ok {
		return nil, errCursor
	}
	return cursor, nil
}

func handleSupportGet(sup Support, log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		v, err := sup.SupportGet(c.Request.Context(), c.Param("order_id"))
		if err != nil {
			writeError(c, log, err)
			return
		}
		writeJSON(c, http.StatusOK, v)
	}
}

// cancelRequest is the body of POST /admin/orders/{order_id}/cancel. A null
// reason is taken as the reason left out: it is required.
type cancelRequest struct {
	Reason *string `json:"reason"`
}

func handleSupportCancel(sup Support, log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		var req cancelRequest
		if err := decodeJSON(c, &req); err != nil {
			writeError(c, log, err)
			return
		}
		if req.Reason == nil {
			writeError(c, log, invalid("reason is required: say why the order is cancelled"))
			return
		}
		v, err := sup.SupportCancel(c.Request.Context(), c.Param("order_id"), *req.Reason)
		if err != nil {
			writeError(c, log, err)
			return
		}
		writeJSON(c, http.StatusOK, v)
	}
}
