package httpapi

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/config"
	"github.com/seckill/seckill/internal/order"
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

func (s *stubShop) SKU(_ context.Context, id uint64) (*order.SKUView, error) {
	return &order.SKUView{ID: id, Name: "Phone", State: catalog.Live}, nil
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
	return order.Placed{OrderID: "1-0000000000000000000000000"}, nil
}

func (s *stubShop) Get(_ context.Context, user, orderID string) (*order.View, error) {
	return &order.View{OrderID: orderID, User: user, Status: order.StatusPendingPayment}, nil
}

func (s *stubShop) Pay(_ context.Context, user, orderID string) (*order.View, error) {
	return &order.View{OrderID: orderID, User: user, Status: order.StatusPaid}, nil
}

func (s *stubShop) Cancel(_ context.Context, user, orderID string) (*order.View, error) {
	return &order.View{OrderID: orderID, User: user, Status: order.StatusCancelled}, nil
}

// stubAdmin validates a SKU spec like catalog.Store does before any I/O and
// otherwise echoes its input.
type stubAdmin struct{}

func (stubAdmin) UpsertSKU(_ context.Context, spec catalog.Spec) (*order.SKUView, bool, error) {
	if err := spec.Validate(); err != nil {
		return nil, false, err
	}
	return &order.SKUView{ID: max(spec.ID, 1), Name: spec.Name, StockTotal: spec.Stock}, spec.ID == 0, nil
}

func (stubAdmin) SetStock(_ context.Context, id uint64, total int64) (*order.SKUView, error) {
	return &order.SKUView{ID: id, StockTotal: total}, nil
}

func (stubAdmin) Audit(_ context.Context, id uint64) (*order.Report, error) {
	return &order.Report{SKU: id, Consistent: true}, nil
}

func (stubAdmin) Reconcile(_ context.Context, id uint64) (*order.Report, error) {
	return &order.Report{SKU: id, Consistent: true}, nil
}

func (stubAdmin) Queue(_ context.Context, sku uint64, _ int) (*order.QueueReport, error) {
	return &order.QueueReport{SKU: sku}, nil
}

func (stubAdmin) DeadLetters(context.Context, uint64, int, int) ([]order.TaskView, error) {
	return nil, nil
}

func (stubAdmin) RequeueDead(context.Context, uint64, string) error { return order.ErrTaskNotFound }

func (stubAdmin) DeleteDead(context.Context, uint64, string) error { return order.ErrTaskNotFound }

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
	d := Deps{
		Log:        slog.New(slog.NewTextHandler(io.Discard, nil)),
		HTTP:       testHTTP(t),
		Shop:       &stubShop{},
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
