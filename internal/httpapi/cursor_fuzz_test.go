package httpapi

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/seckill/seckill/internal/order"
	"github.com/seckill/seckill/internal/orderid"
	"github.com/seckill/seckill/internal/outbox"
	"github.com/seckill/seckill/internal/sale"
)

// cursorSpy records the place each list was asked to continue from.
type cursorSpy struct {
	after  []uint64
	orders []*order.Cursor
}

type spyShop struct {
	*stubShop
	spy *cursorSpy
}

func (s spyShop) ListSKUs(_ context.Context, _ []string, after uint64, _ int) ([]sale.SKUView, uint64, error) {
	s.spy.after = append(s.spy.after, after)
	return nil, 0, nil
}

func (s spyShop) ListOrders(_ context.Context, _ string, cursor *order.Cursor, _ int) ([]order.View, *order.Cursor, error) {
	s.spy.orders = append(s.spy.orders, cursor)
	return nil, nil, nil
}

type spyAdmin struct {
	stubAdmin
	spy *cursorSpy
}

func (s spyAdmin) AdminSKUs(_ context.Context, after uint64, _ int) ([]sale.AdminSKUView, uint64, error) {
	s.spy.after = append(s.spy.after, after)
	return nil, 0, nil
}

type spySupport struct {
	*stubSupport
	spy *cursorSpy
}

func (s spySupport) SupportList(_ context.Context, _ order.SupportQuery, cursor *order.Cursor, _ int) ([]order.AdminView, *order.Cursor, error) {
	s.spy.orders = append(s.spy.orders, cursor)
	return nil, nil, nil
}

type spyEvents struct {
	*stubEvents
	spy *cursorSpy
}

func (s spyEvents) List(_ context.Context, _, _ string, after uint64, _ int) ([]outbox.View, uint64, error) {
	s.spy.after = append(s.spy.after, after)
	return nil, 0, nil
}

type spyPayments struct {
	*stubPayments
	spy *cursorSpy
}

func (s spyPayments) Payments(_ context.Context, _ order.PaymentQuery, after uint64, _ int) ([]order.Payment, uint64, error) {
	s.spy.after = append(s.spy.after, after)
	return nil, 0, nil
}

// What the API gives as cursors, said again independently of its decoders:
// base64url without padding, in the one text an encoder writes, of
// "sku:<id>" (1 to 2^63-1) or "order:<Unix ms>:<order id>" with a time from
// 1970 to the end of year 9999.
var (
	idCursorText    = regexp.MustCompile(`^sku:[1-9][0-9]*$`)
	orderCursorText = regexp.MustCompile(`^order:(0|[1-9][0-9]*):(.*)$`)
)

func givenText(s string) (string, bool) {
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || strings.ContainsAny(s, "\r\n") {
		return "", false
	}
	return string(b), true
}

func givenIDCursor(s string) bool {
	text, ok := givenText(s)
	if !ok || !idCursorText.MatchString(text) {
		return false
	}
	_, err := strconv.ParseInt(strings.TrimPrefix(text, "sku:"), 10, 64)
	return err == nil
}

func givenOrderCursor(s string) bool {
	text, ok := givenText(s)
	m := orderCursorText.FindStringSubmatch(text)
	if !ok || m == nil {
		return false
	}
	ms, err := strconv.ParseInt(m[1], 10, 64)
	_, _, _, isOrder := orderid.Parse(m[2])
	return err == nil && ms <= 253402300799999 && isOrder
}

// FuzzCursor: every list with a cursor (SKUs, admin SKUs, the shopper's
// orders, the support list of orders, events, payments) answers 400
// invalid_request to a cursor it would not give and never asks its store
// to continue from it; one it would give reaches the store as the place it
// names.
func FuzzCursor(f *testing.F) {
	const id = "42-01hxd7k2m3n4p5q6r7s8t9v0"
	b64 := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, s := range []string{
		encodeCursor(1), encodeCursor(1 << 62), b64("sku:9223372036854775807"), b64("sku:9223372036854775808"),
		b64("sku:01"), b64("sku:+1"), b64("sku:0"), b64("sku:1") + "=", "c2t1OjF", "c2t1\nOjE",
		encodeOrderCursor(&order.Cursor{CreatedMS: 1795400000000, OrderID: id}),
		b64("order:253402300799999:" + id), b64("order:253402300800000:" + id), b64("order:-1:" + id),
		b64("order:0:" + id), b64("order:00:" + id), b64("order:1:x"), b64("order:1:" + id + " "),
		b64("order:1:" + strings.ToUpper(id)), b64("order:1:" + id + "\xff"), "", "x", "====",
	} {
		f.Add(s)
	}
	spy := &cursorSpy{}
	h := testAPI(f, func(d *Deps) {
		shop := spyShop{&stubShop{}, spy}
		d.Shop, d.Sales = shop, shop
		d.Admin = spyAdmin{stubAdmin{}, spy}
		d.Support = spySupport{&stubSupport{}, spy}
		d.Events = spyEvents{&stubEvents{}, spy}
		d.Payments = spyPayments{&stubPayments{}, spy}
	})
	headers := map[string]string{"Authorization": "Bearer " + testAdminToken, "X-User-ID": "alice"}
	f.Fuzz(func(t *testing.T, cursor string) {
		q := "?" + url.Values{"cursor": {cursor}}.Encode()
		for _, path := range []string{"/api/v1/skus", "/admin/skus", "/admin/events", "/admin/payments"} {
			*spy = cursorSpy{}
			w := send(h, http.MethodGet, path+q, nil, headers)
			given := givenIDCursor(cursor)
			switch {
			case given && w.Code != http.StatusOK, !given && w.Code != http.StatusBadRequest:
				t.Fatalf("%s cursor %q: %d %s", path, cursor, w.Code, w.Body)
			case !given && len(spy.after) > 0:
				t.Fatalf("%s cursor %q reached the store as %d", path, cursor, spy.after[0])
			case given && (len(spy.after) != 1 || encodeCursor(spy.after[0]) != cursor):
				t.Fatalf("%s cursor %q reached the store as %v", path, cursor, spy.after)
			}
		}
		for _, path := range []string{"/api/v1/orders", "/admin/orders"} {
			*spy = cursorSpy{}
			w := send(h, http.MethodGet, path+q, nil, headers)
			given := givenOrderCursor(cursor)
			switch {
			case given && w.Code != http.StatusOK, !given && w.Code != http.StatusBadRequest:
				t.Fatalf("%s cursor %q: %d %s", path, cursor, w.Code, w.Body)
			case !given && len(spy.orders) > 0:
				t.Fatalf("%s cursor %q reached the store as %+v", path, cursor, spy.orders[0])
			case given && (len(spy.orders) != 1 || encodeOrderCursor(spy.orders[0]) != cursor):
				t.Fatalf("%s cursor %q reached the store as %+v", path, cursor, spy.orders)
			}
			if w.Code == http.StatusBadRequest && !strings.Contains(w.Body.String(), `"error":"invalid_request"`) {
				t.Fatalf("%s cursor %q: %s", path, cursor, w.Body)
			}
		}
	})
}
