package httpapi

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/seckill/seckill/internal/config"
	"github.com/seckill/seckill/internal/order"
	"github.com/seckill/seckill/internal/stock"
)

// benchShop answers every buy the same way, with no I/O.
type benchShop struct {
	stubShop
	err error
}

func (s *benchShop) Place(_ context.Context, user string, in order.PlaceInput) (order.Placed, error) {
	if err := in.Validate(user); err != nil {
		return order.Placed{}, err
	}
	if s.err != nil {
		return order.Placed{}, s.err
	}
	return order.Placed{OrderID: "42-06h051n2p8v751m9hwfs1nee"}, nil
}

// discard is a ResponseWriter that keeps nothing, so the benchmark measures
// the handler and not a recorder.
type discard struct {
	h      http.Header
	status int
}

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(status int)      { d.status = status }

// BenchmarkPlaceOrder is the HTTP layer of the buy path, middleware
// included, on a shop that accepts or answers sold out without I/O.
func BenchmarkPlaceOrder(b *testing.B) {
	cfg, err := config.Load("", nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		err    error
		status int
	}{
		{"accepted", nil, http.StatusAccepted},
		{"sold_out", stock.ErrSoldOut, http.StatusConflict},
	} {
		b.Run(tc.name, func(b *testing.B) {
			h := New(Deps{
				Log:  slog.New(slog.NewTextHandler(io.Discard, nil)),
				HTTP: cfg.HTTP,
				Shop: &benchShop{err: tc.err},
			})
			body := []byte(`{"sku_id":42,"qty":1}`)
			rd := bytes.NewReader(body)
			req, _ := http.NewRequest(http.MethodPost, "http://seckill.test/api/v1/orders", rd)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-User-ID", "alice")
			w := &discard{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				rd.Reset(body)
				req.Body = io.NopCloser(rd)
				clear(w.h)
				h.ServeHTTP(w, req)
				if w.status != tc.status {
					b.Fatalf("status %d, want %d", w.status, tc.status)
				}
			}
		})
	}
}
