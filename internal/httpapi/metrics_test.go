package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	gotoken "go/token"
	"log/slog"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/order"
)

// oddShop refuses every buy with an API error whose code and status come
// from the shopper's id, as a domain error carrying a code of its own would.
type oddShop struct{ stubShop }

func (s *oddShop) Place(_ context.Context, user string, _ order.PlaceInput) (order.Placed, error) {
	var n int
	_, _ = fmt.Sscanf(user, "odd-%d", &n)
	return order.Placed{}, &Error{Status: 600 + n%400, Code: fmt.Sprintf("made_up_%d", n), Detail: "odd"}
}

// series counts the label sets of each metric family in reg.
func series(t *testing.T, reg *prometheus.Registry) map[string]int {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]int{}
	for _, mf := range mfs {
		out[mf.GetName()] = len(mf.GetMetric())
	}
	return out
}

// labelValues lists the values label takes in the metric family name.
func labelValues(t *testing.T, reg *prometheus.Registry, name, label string) map[string]bool {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]bool{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == label {
					out[lp.GetValue()] = true
				}
			}
		}
	}
	return out
}

// TestMetricLabelsBounded: whatever clients send — a method of their own on
// each request, paths no route has, buys that end in codes and statuses
// outside the API's — the HTTP metrics keep a small fixed set of series.
func TestMetricLabelsBounded(t *testing.T) {
	const n = 1000
	reg := prometheus.NewRegistry()
	h := rawAPI(t, func(d *Deps) {
		d.Registry = reg
		d.Shop = &oddShop{}
	})
	for i := range n {
		method := fmt.Sprintf("MADEUP%d", i)
		send(h, method, fmt.Sprintf("/no/such/path/%d", i), nil, nil)
		send(h, method, "/healthz", nil, nil)
		send(h, http.MethodGet, fmt.Sprintf("/api/v1/nothing-%d", i), nil, nil)
		send(h, http.MethodPost, "/api/v1/orders", []byte(`{"sku_id":1,"qty":1}`), map[string]string{"X-User-ID": fmt.Sprintf("odd-%d", i)})
	}

	got := series(t, reg)
	assert.LessOrEqual(t, got["seckill_http_request_duration_seconds"], 8, "latency series")
	// One series per code of the API's, made at start, and other.
	codes := map[string]bool{}
	for _, o := range buyOutcomeNames() {
		codes[o] = true
	}
	assert.LessOrEqual(t, got["seckill_buy_requests_total"], len(codes)+1, "buy outcome series")
	assert.Less(t, len(codes), 64, "the API's codes are a small fixed set")

	known := map[string]bool{"GET": true, "HEAD": true, "POST": true, "PUT": true, "PATCH": true,
		"DELETE": true, "OPTIONS": true, "CONNECT": true, "TRACE": true, "other": true}
	assert.Empty(t, unexpected(labelValues(t, reg, "seckill_http_request_duration_seconds", "method"), func(m string) bool {
		return known[m]
	}), "method labels")
	assert.Empty(t, unexpected(labelValues(t, reg, "seckill_http_request_duration_seconds", "status"), func(s string) bool {
		return s == "other" || len(s) == 3 && s >= "100" && s <= "599"
	}), "status labels")
	// The 405s of /healthz are unmatched too: no route took them.
	assert.Equal(t, map[string]bool{"unmatched": true, "/api/v1/orders": true},
		labelValues(t, reg, "seckill_http_request_duration_seconds", "route"), "route labels")
	assert.Empty(t, unexpected(labelValues(t, reg, "seckill_buy_requests_total", "outcome"), func(o string) bool {
		return !strings.HasPrefix(o, "made_up")
	}), "outcome labels")
}

// unexpected returns up to three of values that ok refuses, so that a
// failure shows a sample rather than every one.
func unexpected(values map[string]bool, ok func(string) bool) []string {
	var out []string
	for v := range values {
		if !ok(v) && len(out) < 3 {
			out = append(out, v)
		}
	}
	return out
}

// TestAccessLogMethodBounded: the access log's method is one the API knows
// or "other", never a client's string of any length.
func TestAccessLogMethodBounded(t *testing.T) {
	var buf bytes.Buffer
	h := rawAPI(t, func(d *Deps) {
		d.Log = slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	send(h, strings.Repeat("X", 4000), "/no/such/path", nil, nil)
	send(h, http.MethodGet, "/healthz", nil, nil)

	var methods []string
	for line := range strings.Lines(buf.String()) {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		if rec["msg"] == "http" {
			m, _ := rec["method"].(string)
			methods = append(methods, m)
		}
	}
	require.Len(t, methods, 2)
	if assert.LessOrEqual(t, len(methods[0]), 16, "bytes of the made-up method in the log") {
		assert.Equal(t, []string{"other", "GET"}, methods)
	}
}

func TestMethodLabel(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"GET", "GET"}, {"HEAD", "HEAD"}, {"POST", "POST"}, {"PUT", "PUT"}, {"PATCH", "PATCH"},
		{"DELETE", "DELETE"}, {"OPTIONS", "OPTIONS"}, {"CONNECT", "CONNECT"}, {"TRACE", "TRACE"},
		{"get", "other"}, {"PROPFIND", "other"}, {"", "other"}, {strings.Repeat("G", 1000), "other"},
	} {
		assert.Equal(t, tc.want, methodLabel(tc.in), "%.20q", tc.in)
	}
}

func TestStatusLabel(t *testing.T) {
	for _, tc := range []struct {
		in   int
		want string
	}{
		{100, "100"}, {200, "200"}, {404, "404"}, {599, "599"},
		{0, "other"}, {99, "other"}, {600, "other"}, {999, "other"}, {-1, "other"},
	} {
		assert.Equal(t, tc.want, statusLabel(boundStatus(tc.in)), "%d", tc.in)
	}
}

// TestBuyOutcomesKnowEveryCode: every error code written in this package
// is a buy outcome of its own, so that none is counted as "other".
func TestBuyOutcomesKnowEveryCode(t *testing.T) {
	known := map[string]bool{}
	for _, o := range buyOutcomeNames() {
		known[o] = true
	}
	fset := gotoken.NewFileSet()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	var codes []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			kv, ok := n.(*ast.KeyValueExpr)
			if !ok {
				return true
			}
			key, ok := kv.Key.(*ast.Ident)
			lit, isLit := kv.Value.(*ast.BasicLit)
			if ok && key.Name == "Code" && isLit && lit.Kind == gotoken.STRING {
				code, err := strconv.Unquote(lit.Value)
				require.NoError(t, err)
				codes = append(codes, code)
			}
			return true
		})
	}
	require.NotEmpty(t, codes, "no Code: \"...\" found")
	for _, c := range codes {
		assert.True(t, known[c], "error code %q is not a buy outcome", c)
	}
}
