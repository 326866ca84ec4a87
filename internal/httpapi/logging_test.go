package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/order"
	"github.com/seckill/seckill/internal/sale"
	"github.com/seckill/seckill/internal/stock"
)

// erringShop answers every SKU read and every buy with what err returns
// for the request's context.
type erringShop struct {
	stubShop
	err func(ctx context.Context) error
}

func (s *erringShop) SKU(ctx context.Context, _ uint64) (*sale.SKUView, error) {
	return nil, s.err(ctx)
}

func (s *erringShop) Place(ctx context.Context, _ string, _ order.PlaceInput) (order.Placed, error) {
	return order.Placed{}, s.err(ctx)
}

// syncBuffer is a log both the handler and the test touch.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// answered serves one GET of a SKU and one buy on a shop failing with err,
// the client gone before the answer when gone, and returns the log (at
// debug) and the statuses the latency histogram counted.
func answered(t *testing.T, err func(context.Context) error, gone bool) (string, map[string]bool) {
	t.Helper()
	var log syncBuffer
	reg := prometheus.NewRegistry()
	h := rawAPI(t, func(d *Deps) {
		shop := &erringShop{err: err}
		d.Shop, d.Sales, d.Registry = shop, shop, reg
		d.Log = slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	for _, r := range []struct{ method, path, body string }{
		{http.MethodGet, "/api/v1/skus/7", ""},
		{http.MethodPost, "/api/v1/orders", `{"sku_id":7,"qty":1}`},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		if gone {
			cancel() // the browser left the page
		}
		req := httptest.NewRequestWithContext(ctx, r.method, "http://seckill.test"+r.path, strings.NewReader(r.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-User-ID", "alice")
		h.ServeHTTP(httptest.NewRecorder(), req)
		cancel()
	}
	return log.String(), labelValues(t, reg, "seckill_http_request_duration_seconds", "status")
}

// A request whose client went away before its answer (a console page the
// browser left, a shopper who closed the tab) is logged as such at info,
// counted under status 499, never as an error or a 5xx: whatever the store
// said of its cancelled call.
func TestARequestTheClientAbandonedIsNoError(t *testing.T) {
	for name, err := range map[string]func(context.Context) error{
		"redis":      func(ctx context.Context) error { return fmt.Errorf("stock: buy: %w", ctx.Err()) },
		"sqlite":     func(context.Context) error { return errors.New("interrupted (9)") },
		"mysql":      func(context.Context) error { return fmt.Errorf("catalog: get: %w", io.ErrUnexpectedEOF) },
		"queued":     func(context.Context) error { return fmt.Errorf("%w: stale", order.ErrQueued) },
		"sold out":   func(context.Context) error { return stock.ErrSoldOut },
		"lock busy":  func(context.Context) error { return fmt.Errorf("lock: %w", stock.ErrBusy) },
		"no such ID": func(context.Context) error { return catalog.ErrNotFound },
	} {
		t.Run(name, func(t *testing.T) {
			log, statuses := answered(t, err, true)
			assert.NotContains(t, log, "level=ERROR", log)
			assert.NotContains(t, log, "level=WARN", log)
			assert.Equal(t, 2, strings.Count(log, `level=INFO msg="client closed request"`), log)
			assert.Equal(t, map[string]bool{"499": true}, statuses)
		})
	}
}

// The refusals a sale gives by design (busy under contention, sold out,
// any 4xx) are never logged at warn or error, and a request refused with
// them is logged at debug; an internal error, and a store that cannot be
// reached, are: those an operator must look at.
func TestOnlyWhatAnOperatorMustSeeIsAnError(t *testing.T) {
	for name, tc := range map[string]struct {
		err   error
		error bool
	}{
		"busy":            {fmt.Errorf("lock: %w", stock.ErrBusy), false},
		"state restored":  {stock.ErrStateLost, false},
		"sold out":        {stock.ErrSoldOut, false},
		"limit":           {stock.ErrLimitExceeded, false},
		"rate limited":    {&stock.RateLimitedError{RetryAfter: 1}, false},
		"not found":       {catalog.ErrNotFound, false},
		"invalid":         {fmt.Errorf("%w: qty", order.ErrInvalid), false},
		"redis down":      {fmt.Errorf("stock: %w", io.ErrUnexpectedEOF), true},
		"internal":        {errors.New("boom"), true},
		"cancelled by us": {fmt.Errorf("stock: %w", context.Canceled), false},
	} {
		t.Run(name, func(t *testing.T) {
			log, statuses := answered(t, func(context.Context) error { return tc.err }, false)
			assert.NotContains(t, log, "level=WARN", log)
			assert.Equal(t, tc.error, strings.Contains(log, "level=ERROR"), log)
			if !tc.error {
				assert.Equal(t, 2, strings.Count(log, `level=DEBUG msg=http`), log)
			}
			assert.NotContains(t, statuses, "499", "the client was there")
		})
	}
}
