package httpapi

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/order"
)

// stubSupport records what the support handlers ask for.
type stubSupport struct {
	query  order.SupportQuery
	cursor *order.Cursor
	limit  int
	reason string
}

func (s *stubSupport) SupportList(_ context.Context, q order.SupportQuery, cursor *order.Cursor, limit int) ([]order.AdminView, *order.Cursor, error) {
	s.query, s.cursor, s.limit = q, cursor, limit
	return nil, &order.Cursor{CreatedMS: 1794355201250, OrderID: "42-01hxd7k2m3n4p5q6r7s8t9v0"}, nil
}

func (s *stubSupport) SupportGet(_ context.Context, orderID string) (*order.AdminView, error) {
	at := time.Date(2026, 11, 11, 0, 0, 1, 0, time.UTC)
	return &order.AdminView{View: order.View{OrderID: orderID, SKU: 42, User: "alice", Qty: 1, PriceCents: 100,
		Status: order.StatusQueued, CreatedAt: at, ExpiresAt: at.Add(15 * time.Minute), PaymentReference: stubReference(orderID)}, Refund: order.RefundNone}, nil
}

func (s *stubSupport) SupportCancel(ctx context.Context, orderID, reason string) (*order.AdminView, error) {
	s.reason = reason
	return s.SupportGet(ctx, orderID)
}

// The filters reach the service as given (a repeated status adds up), and
// the next page's cursor is the one the service named.
func TestSupportHandlers(t *testing.T) {
	sup := &stubSupport{}
	h := testAPI(t, func(d *Deps) { d.Support = sup })
	admin := map[string]string{"Authorization": "Bearer " + testAdminToken}

	w := send(h, "GET", "/admin/orders?sku_id=42&user_id=alice&status=paid,cancelled&status=queued&limit=5", nil, admin)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.Equal(t, order.SupportQuery{SKU: 42, User: "alice", Statuses: []string{"paid", "cancelled", "queued"}}, sup.query)
	assert.Equal(t, 5, sup.limit)
	assert.Nil(t, sup.cursor)
	next := "b3JkZXI6MTc5NDM1NTIwMTI1MDo0Mi0wMWh4ZDdrMm0zbjRwNXE2cjdzOHQ5djA"
	assert.JSONEq(t, `{"items":[],"next_cursor":"`+next+`"}`, w.Body.String())

	w = send(h, "GET", "/admin/orders?cursor="+next, nil, admin)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.Equal(t, &order.Cursor{CreatedMS: 1794355201250, OrderID: "42-01hxd7k2m3n4p5q6r7s8t9v0"}, sup.cursor)
	assert.Equal(t, defaultLimit, sup.limit)

	w = send(h, "POST", "/admin/orders/42-01hxd7k2m3n4p5q6r7s8t9v0/cancel", []byte(`{"reason":"asked by phone"}`), admin)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.Equal(t, "asked by phone", sup.reason)
	w = send(h, "POST", "/admin/orders/42-01hxd7k2m3n4p5q6r7s8t9v0/cancel", []byte(`{"reason":null}`), admin)
	assert.Equal(t, http.StatusBadRequest, w.Code, w.Body.String())
	assert.Equal(t, http.StatusUnauthorized, send(h, "GET", "/admin/orders/42-01hxd7k2m3n4p5q6r7s8t9v0", nil, nil).Code)
}
