// Package apitest holds the server to its API description in tests: every
// request a test sends through Handler or Transport, and the response it
// gets, is checked against api/openapi.yaml with kin-openapi's
// openapi3filter. A response the document does not describe (an undocumented
// status, a field of the wrong type, a missing required one) fails the test,
// and so does a request the document refuses that the server accepted.
package apitest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/seckill/seckill/api"
)

var (
	loadOnce sync.Once
	router   routers.Router
	loadErr  error
)

func load() (routers.Router, error) {
	loadOnce.Do(func() {
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromData(api.YAML)
		if err != nil {
			loadErr = err
			return
		}
		if err := doc.Validate(loader.Context); err != nil {
			loadErr = err
			return
		}
		doc.Servers = nil // any host: tests listen on loopback ports
		router, loadErr = gorillamux.NewRouter(doc)
	})
	return router, loadErr
}

var options = &openapi3filter.Options{
	AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
	IncludeResponseStatus: true,
	MultiError:            true,
}

// Check validates one exchange: the request (its body given apart, since
// it has been read) and the response. Routes the document does not have
// are checked only for being answered 404 or 405.
func Check(req *http.Request, reqBody []byte, status int, header http.Header, respBody []byte) error {
	r, err := load()
	if err != nil {
		return fmt.Errorf("apitest: load api/openapi.yaml: %w", err)
	}
	if req.Method == http.MethodOptions {
		return nil // a CORS preflight, not an operation
	}
	req = req.Clone(context.Background())
	req.Body = io.NopCloser(bytes.NewReader(reqBody))
	route, params, err := r.FindRoute(req)
	if err != nil {
		if status == http.StatusNotFound || status == http.StatusMethodNotAllowed {
			return nil
		}
		return fmt.Errorf("%s %s answered %d: no such operation in api/openapi.yaml", req.Method, req.URL.Path, status)
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: options}
	reqErr := openapi3filter.ValidateRequest(context.Background(), in)
	if reqErr != nil && status < 400 {
		return fmt.Errorf("%s %s answered %d, but the document refuses the request: %w", req.Method, req.URL.RequestURI(), status, reqErr)
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: status, Header: header,
		Body: io.NopCloser(bytes.NewReader(respBody)), Options: options,
	}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		return fmt.Errorf("%s %s answered %d %s: the document does not allow it: %w", req.Method, req.URL.RequestURI(), status, excerpt(respBody), err)
	}
	return nil
}

func excerpt(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

// Handler returns h checking every exchange with Check; a mismatch fails tb.
func Handler(tb testing.TB, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body []byte
		if r.Body != nil {
			body, _ = io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if err := Check(r, body, rec.Code, rec.Header(), rec.Body.Bytes()); err != nil {
			tb.Error(err)
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
}

// Transport returns rt (http.DefaultTransport when nil) checking every
// exchange with Check; a mismatch fails tb.
func Transport(tb testing.TB, rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		var body []byte
		if req.Body != nil {
			body, _ = io.ReadAll(req.Body)
			req.Body = io.NopCloser(bytes.NewReader(body))
		}
		resp, err := rt.RoundTrip(req)
		if err != nil {
			return resp, err
		}
		data, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			return nil, err
		}
		resp.Body = io.NopCloser(bytes.NewReader(data))
		if err := Check(req, body, resp.StatusCode, resp.Header, data); err != nil {
			tb.Error(err)
		}
		return resp, nil
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
