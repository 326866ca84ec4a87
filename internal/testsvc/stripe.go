package testsvc

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// EnvStripe names stripe-mock, Stripe's mock of its API, which
// scripts/test-services.sh starts: no Stripe account is reachable from a
// test.
const EnvStripe = "SECKILL_TEST_STRIPE_API_BASE"

// StripeCall is a call made to Stripe's API.
type StripeCall struct {
	Method         string
	Path           string
	IdempotencyKey string
	Form           url.Values
}

// StripeAPI is stripe-mock behind a proxy of the test's that records every
// call and answers the ones it is told to refuse as Stripe does. stripe-mock
// is stateless — it answers each call with a fixture and remembers nothing
// — so a test asserts what was sent to it, and what seckill did with the
// answer.
type StripeAPI struct {
	URL string

	mu     sync.Mutex
	calls  []StripeCall
	refuse map[string][2]string // "METHOD /path prefix" → Stripe's error code and message
}

// Stripe returns stripe-mock behind a recording proxy, closed with the test;
// it skips the test (fails it with CI=true) when stripe-mock is not running.
func Stripe(t testing.TB) *StripeAPI {
	t.Helper()
	base := Env(t, EnvStripe)
	target, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s: %v", EnvStripe, err)
	}
	probe, err := http.NewRequest(http.MethodGet, strings.TrimSuffix(base, "/")+"/v1/payment_intents?limit=1", nil)
	if err != nil {
		t.Fatal(err)
	}
	probe.SetBasicAuth("sk_test_probe", "")
	res, err := (&http.Client{Timeout: 5 * time.Second}).Do(probe)
	if err != nil {
		Missing(t, "stripe-mock at %s: %v; %s", base, err, startServicesMsg)
	} else {
		_ = res.Body.Close()
	}
	s := &StripeAPI{refuse: map[string][2]string{}}
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		form, _ := url.ParseQuery(string(body))
		if r.Method == http.MethodGet {
			form = r.URL.Query()
		}
		s.mu.Lock()
		s.calls = append(s.calls, StripeCall{Method: r.Method, Path: r.URL.Path, IdempotencyKey: r.Header.Get("Idempotency-Key"), Form: form})
		var answer [2]string
		refused := false
		for k, a := range s.refuse {
			if method, prefix, _ := strings.Cut(k, " "); method == r.Method && strings.HasPrefix(r.URL.Path, prefix) {
				answer, refused = a, true
			}
		}
		s.mu.Unlock()
		if refused {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
				"type": "invalid_request_error", "code": answer[0], "message": answer[1]}})
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// Refuse makes calls of method to paths starting with prefix answer 400
// with Stripe's error body carrying code and message, as Stripe refuses a
// request.
func (s *StripeAPI) Refuse(method, prefix, code, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuse[method+" "+prefix] = [2]string{code, message}
}

// Calls returns the calls made of method to paths starting with prefix, in
// the order they came.
func (s *StripeAPI) Calls(method, prefix string) []StripeCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []StripeCall
	for _, c := range s.calls {
		if c.Method == method && strings.HasPrefix(c.Path, prefix) {
			out = append(out, c)
		}
	}
	return out
}
