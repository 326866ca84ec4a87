package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/apitest"
	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/config"
	"github.com/seckill/seckill/internal/order"
	"github.com/seckill/seckill/internal/orderid"
	"github.com/seckill/seckill/internal/sale"
	"github.com/seckill/seckill/internal/seedfile"
	"github.com/seckill/seckill/internal/stock"
)

// stubShop stands in for order.Service: it runs the same pre-I/O validation
// and accepts everything else, so tests see only the HTTP layer's behaviour.
// It remembers the client address of the last buy, and refuses user
// "limited" as over its rate.
type stubShop struct {
	placed atomic.Int64
	client atomic.Value // string
}

// stubSKU is a live SKU as the API shows it.
func stubSKU(id uint64) *sale.SKUView {
	return &sale.SKUView{ID: id, Name: "Phone", PriceCents: 99900, Stock: 10, StockTotal: 10, StockLeft: 3, PerUserLimit: 1,
		StartsAt: time.Date(2026, 11, 11, 0, 0, 0, 0, time.UTC), EndsAt: time.Date(2036, 11, 11, 1, 0, 0, 0, time.UTC), State: catalog.Live}
}

func (s *stubShop) SKU(_ context.Context, id uint64) (*sale.SKUView, error) {
	return stubSKU(id), nil
}

// ListSKUs lists SKUs 1 to 5, live, a page at a time.
func (s *stubShop) ListSKUs(_ context.Context, states []string, after uint64, limit int) ([]sale.SKUView, uint64, error) {
	out := []sale.SKUView{}
	if !slices.Contains(states, catalog.Live) {
		return out, 0, nil
	}
	for id := after + 1; id <= 5; id++ {
		if len(out) == limit {
			return out, id - 1, nil
		}
		out = append(out, *stubSKU(id))
	}
	return out, 0, nil
}

func (s *stubShop) Place(_ context.Context, user string, in order.PlaceInput) (order.Placed, error) {
	if err := in.Validate(user); err != nil {
		return order.Placed{}, err
	}
	s.client.Store(in.Client)
	if user == "limited" {
		return order.Placed{}, &stock.RateLimitedError{RetryAfter: 1500 * time.Millisecond}
	}
	s.placed.Add(1)
	return order.Placed{OrderID: "1-0000000000000000000000000", Status: order.StatusQueued}, nil
}

// stubOrder is an order of user as the API shows it.
func stubOrder(user, orderID, status string) *order.View {
	created := time.Date(2026, 11, 11, 0, 0, 1, 0, time.UTC)
	return &order.View{OrderID: orderID, SKU: 1, User: user, Qty: 1, PriceCents: 99900, Status: status,
		CreatedAt: created, ExpiresAt: created.Add(15 * time.Minute), PaymentReference: stubReference(orderID)}
}

// stubReference is the payment reference of order id, or one of 32 zeros
// for a string a test uses that is not an order id.
func stubReference(id string) string {
	if ref, ok := orderid.Reference(id); ok {
		return ref
	}
	return strings.Repeat("0", orderid.ReferenceLen)
}

// ListOrders lists orders 3, 2 and 1 of the shopper, a page at a time.
func (s *stubShop) ListOrders(_ context.Context, user string, cursor *order.Cursor, limit int) ([]order.View, *order.Cursor, error) {
	out := []order.View{}
	for n := 3; n >= 1; n-- {
		v := stubOrder(user, fmt.Sprintf("1-%024d", n), order.StatusPendingPayment)
		v.CreatedAt = v.CreatedAt.Add(time.Duration(n) * time.Second)
		if cursor != nil && v.CreatedAt.UnixMilli() >= cursor.CreatedMS {
			continue
		}
		if len(out) == limit {
			last := out[len(out)-1]
			return out, &order.Cursor{CreatedMS: last.CreatedAt.UnixMilli(), OrderID: last.OrderID}, nil
		}
		out = append(out, *v)
	}
	return out, nil, nil
}

func (s *stubShop) Get(_ context.Context, user, orderID string) (*order.View, error) {
	return stubOrder(user, orderID, order.StatusPendingPayment), nil
}

func (s *stubShop) Pay(_ context.Context, user, orderID string) (*order.View, error) {
	return stubOrder(user, orderID, order.StatusPaid), nil
}

func (s *stubShop) Cancel(_ context.Context, user, orderID string) (*order.View, error) {
	return stubOrder(user, orderID, order.StatusCancelled), nil
}

// stubAdmin validates a SKU spec like catalog.Store does before any I/O and
// otherwise echoes its input.
type stubAdmin struct{}

func (stubAdmin) UpsertSKU(_ context.Context, spec catalog.Spec) (*sale.SeededSKU, bool, error) {
	sku, err := spec.New(time.Now())
	if err != nil {
		return nil, false, err
	}
	sku.ID = max(sku.ID, 1)
	return stubSeeded(sku), spec.ID == 0, nil
}

func (a stubAdmin) Seed(ctx context.Context, f seedfile.File) ([]sale.Seeded, []sale.DropView, error) {
	var out []sale.Seeded
	for _, r := range f.Rows {
		v, created, err := a.UpsertSKU(ctx, r.Spec)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, sale.Seeded{Created: created, SKU: v})
	}
	return out, []sale.DropView{}, nil
}

func (stubAdmin) UpdateSKU(_ context.Context, id uint64, spec catalog.Spec) (*sale.SeededSKU, error) {
	v := stubSKU(id)
	sku, err := spec.Apply(catalog.SKU{ID: id, Name: v.Name, PriceCents: v.PriceCents, StockTotal: v.Stock,
		PerUserLimit: v.PerUserLimit, Buckets: 1, StartsAt: v.StartsAt, EndsAt: v.EndsAt}, time.Now())
	if err != nil {
		return nil, err
	}
	return stubSeeded(sku), nil
}

func stubSeeded(sku catalog.SKU) *sale.SeededSKU {
	v := stubSKU(sku.ID)
	v.Name, v.PriceCents, v.Stock, v.StockTotal, v.StockLeft, v.PerUserLimit = sku.Name, sku.PriceCents, sku.StockTotal, sku.StockTotal, sku.StockTotal, sku.PerUserLimit
	v.StartsAt, v.EndsAt = sku.StartsAt.UTC(), sku.EndsAt.UTC()
	return &sale.SeededSKU{SKUView: *v, Buckets: sku.Buckets}
}

func (stubAdmin) SetStock(_ context.Context, id uint64, stock int64) (*sale.SKUView, error) {
	v := stubSKU(id)
	v.Stock, v.StockTotal, v.StockLeft = stock, stock, stock
	return v, nil
}

func (stubAdmin) Audit(_ context.Context, id uint64) (*sale.Report, error) {
	return &sale.Report{SKU: id, Consistent: true}, nil
}

func (stubAdmin) Reconcile(_ context.Context, id uint64) (*sale.Report, error) {
	return &sale.Report{SKU: id, Consistent: true}, nil
}

func (stubAdmin) Queue(_ context.Context, sku uint64, _ int) (*sale.QueueReport, error) {
	return &sale.QueueReport{SKU: sku}, nil
}

func (stubAdmin) DeadLetters(context.Context, uint64, int, int) ([]sale.TaskView, error) {
	return nil, nil
}

func (stubAdmin) AdminSKUs(context.Context, uint64, int) ([]sale.AdminSKUView, uint64, error) {
	return nil, 0, nil
}

func (stubAdmin) EndSale(_ context.Context, id uint64) (*sale.SKUView, error) {
	v := stubSKU(id)
	v.State = catalog.Ended
	return v, nil
}

func (stubAdmin) RequeueDead(context.Context, uint64, string) error { return sale.ErrTaskNotFound }

func (stubAdmin) DeleteDead(context.Context, uint64, string) error { return sale.ErrTaskNotFound }

func (stubAdmin) Drop(_ context.Context, id uint64) (*sale.DropView, error) {
	return nil, fmt.Errorf("%w: %d", catalog.ErrDropNotFound, id)
}

const testAdminToken = "test-admin-token-0123456789"

// testHTTP is the configuration's HTTP section with its defaults.
func testHTTP(t testing.TB) config.HTTP {
	t.Helper()
	cfg, err := config.Load("", nil)
	if err != nil {
		t.Fatalf("default config: %v", err)
	}
	cfg.HTTP.GinMode = "test"
	return cfg.HTTP
}

// testAPI returns the API on stubs with the default HTTP settings, changed
// by edit when it is not nil.
func testAPI(t testing.TB, edit func(*Deps)) http.Handler {
	t.Helper()
	if _, fuzzing := t.(*testing.F); fuzzing {
		return rawAPI(t, edit) // a fuzz function may not fail f; its own checks apply
	}
	return apitest.Handler(t, rawAPI(t, edit))
}

// rawAPI is testAPI without the check against api/openapi.yaml, for the
// tests of answers the document does not describe (a 500).
func rawAPI(t testing.TB, edit func(*Deps)) http.Handler {
	t.Helper()
	shop := &stubShop{}
	d := Deps{
		Shop:       shop,
		Sales:      shop,
		Log:        slog.New(slog.NewTextHandler(io.Discard, nil)),
		HTTP:       testHTTP(t),
		Admin:      stubAdmin{},
		AdminToken: testAdminToken,
	}
	if edit != nil {
		edit(&d)
	}
	return New(d)
}

// send serves one request on h; headers are set as given, without the checks
// a real client would make.
func send(h http.Handler, method, path string, body []byte, headers map[string]string) *httptest.ResponseRecorder {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req := httptest.NewRequest(method, "http://seckill.test"+path, rd)
	if body != nil {
		req.Header["Content-Type"] = []string{"application/json"}
	}
	for k, v := range headers {
		req.Header[http.CanonicalHeaderKey(k)] = []string{v}
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}
