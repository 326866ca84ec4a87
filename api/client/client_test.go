package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// answer is what the fake API answers one buy with; status 0 drops the
// connection without an answer.
type answer struct {
	status     int
	code       string
	retryAfter string
	withID     bool // a 503 unavailable's request_id
}

// fakeShop answers buys in turn with answers (the last one again once they
// run out) and records the bodies and headers it got.
type fakeShop struct {
	t       *testing.T
	answers []answer
	mu      sync.Mutex
	bodies  []map[string]any
	headers []http.Header
}

func (f *fakeShop) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	assert.Equal(f.t, "POST /api/v1/orders", r.Method+" "+r.URL.Path)
	var body map[string]any
	assert.NoError(f.t, json.NewDecoder(r.Body).Decode(&body))
	f.mu.Lock()
	n := len(f.bodies)
	f.bodies = append(f.bodies, body)
	f.headers = append(f.headers, r.Header.Clone())
	f.mu.Unlock()
	a := f.answers[min(n, len(f.answers)-1)]
	if a.status == 0 {
		conn, _, err := w.(http.Hijacker).Hijack()
		require.NoError(f.t, err)
		_ = conn.Close()
		return
	}
	if a.retryAfter != "" {
		w.Header().Set("Retry-After", a.retryAfter)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(a.status)
	if a.status == http.StatusAccepted {
		fmt.Fprintf(w, `{"order_id":"7-order%d","status":"queued"}`, n)
		return
	}
	e := map[string]any{"error": a.code, "detail": "what the server says"}
	if a.withID {
		e["request_id"] = body["request_id"]
	}
	_ = json.NewEncoder(w).Encode(e)
}

func (f *fakeShop) requestIDs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []string
	for _, b := range f.bodies {
		id, _ := b["request_id"].(string)
		ids = append(ids, id)
	}
	return ids
}

// setup starts a fake API answering answers and returns a client of it
// whose waits between attempts are recorded instead of slept.
func setup(t *testing.T, answers ...answer) (*Client, *fakeShop, *[]time.Duration) {
	t.Helper()
	f := &fakeShop{t: t, answers: answers}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c, err := New(srv.URL, WithShopper("alice"))
	require.NoError(t, err)
	waits := &[]time.Duration{}
	c.sleep = func(ctx context.Context, d time.Duration) error {
		*waits = append(*waits, d)
		return ctx.Err()
	}
	return c, f, waits
}

var unavailable = answer{status: 503, code: "unavailable", retryAfter: "2", withID: true}

func TestBuyRetriesA503WithItsRequestIDAfterRetryAfter(t *testing.T) {
	c, f, waits := setup(t, unavailable, answer{status: 503, code: "busy", retryAfter: "1"}, answer{status: 202})
	placed, err := c.Buy(t.Context(), 7, 2)
	require.NoError(t, err)
	assert.Equal(t, Placed{OrderId: "7-order2", Status: "queued"}, placed)

	ids := f.requestIDs()
	require.Len(t, ids, 3)
	assert.Regexp(t, regexp.MustCompile(`^[A-Za-z0-9_.:@-]{1,64}$`), ids[0], "a request id the API takes")
	assert.Equal(t, []string{ids[0], ids[0], ids[0]}, ids, "every attempt with the same request id")
	for _, b := range f.bodies {
		assert.Equal(t, map[string]any{"sku_id": 7.0, "qty": 2.0, "request_id": ids[0]}, b)
	}
	require.Len(t, *waits, 2)
	assert.GreaterOrEqual(t, (*waits)[0], 2*time.Second, "Retry-After: 2 honoured")
	assert.LessOrEqual(t, (*waits)[0], 2500*time.Millisecond, "at most a quarter more")
	assert.GreaterOrEqual(t, (*waits)[1], time.Second)
	assert.LessOrEqual(t, (*waits)[1], 1250*time.Millisecond)

	// Another buy makes another request id.
	_, err = c.Buy(t.Context(), 7, 1)
	require.NoError(t, err)
	assert.NotEqual(t, ids[0], f.requestIDs()[3])
}

func TestBuyRetriesABuyThatGotNoAnswer(t *testing.T) {
	c, f, waits := setup(t, answer{status: 0}, answer{status: 202})
	placed, err := c.Buy(t.Context(), 7, 1, WithRequestID("order-77"), WithPass("p1.7.pass"))
	require.NoError(t, err)
	assert.Equal(t, "7-order1", placed.OrderId)
	assert.Equal(t, []string{"order-77", "order-77"}, f.requestIDs())
	assert.Equal(t, "p1.7.pass", f.bodies[1]["pass"])
	require.Len(t, *waits, 1)
	assert.Positive(t, (*waits)[0], "a back-off without Retry-After")
}

func TestBuyGivesUpOnAnUnknownOutcomeWithItsRequestID(t *testing.T) {
	c, f, waits := setup(t, unavailable)
	_, err := c.Buy(t.Context(), 7, 1)
	var unknown *OutcomeUnknownError
	require.ErrorAs(t, err, &unknown)
	assert.Len(t, f.requestIDs(), DefaultBuyAttempts)
	assert.Len(t, *waits, DefaultBuyAttempts-1)
	assert.Equal(t, f.requestIDs()[0], unknown.RequestID)
	assert.ErrorIs(t, err, ErrUnavailable)
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, unknown.RequestID, apiErr.RequestID, "the request id the answer names")
	assert.Equal(t, 2*time.Second, apiErr.RetryAfter)

	// WithAttempts bounds the attempts; 1 sends once.
	c, f, _ = setup(t, unavailable)
	_, err = c.Buy(t.Context(), 7, 1, WithAttempts(1))
	require.ErrorAs(t, err, &unknown)
	assert.Len(t, f.requestIDs(), 1)
}

func TestBuyAfterBusyAnswersOnlyBoughtNothing(t *testing.T) {
	c, f, _ := setup(t, answer{status: 503, code: "busy", retryAfter: "1"})
	_, err := c.Buy(t.Context(), 7, 1, WithAttempts(2))
	assert.ErrorIs(t, err, ErrBusy)
	var unknown *OutcomeUnknownError
	assert.False(t, errors.As(err, &unknown), "busy: nothing was taken")
	assert.Len(t, f.requestIDs(), 2)
}

func TestBuyRefusalsAreTypedAndNotRetried(t *testing.T) {
	for _, tc := range []struct {
		a    answer
		want error
	}{
		{answer{status: 409, code: "sold_out"}, ErrSoldOut},
		{answer{status: 409, code: "limit_exceeded"}, ErrLimitExceeded},
		{answer{status: 403, code: "sale_not_started"}, ErrSaleNotStarted},
		{answer{status: 403, code: "sale_ended"}, ErrSaleEnded},
		{answer{status: 403, code: "pass_required"}, ErrPassRequired},
		{answer{status: 403, code: "pass_invalid"}, ErrPassInvalid},
		{answer{status: 404, code: "unknown_sku"}, ErrUnknownSKU},
		{answer{status: 429, code: "rate_limited", retryAfter: "3"}, ErrRateLimited},
		{answer{status: 401, code: "unauthorized"}, ErrUnauthorized},
		{answer{status: 400, code: "invalid_request"}, ErrInvalidRequest},
	} {
		c, f, _ := setup(t, tc.a)
		_, err := c.Buy(t.Context(), 7, 1)
		require.ErrorIs(t, err, tc.want, tc.a.code)
		var apiErr *APIError
		require.ErrorAs(t, err, &apiErr)
		assert.Equal(t, tc.a.status, apiErr.StatusCode)
		assert.Equal(t, ErrorError(tc.a.code), apiErr.Code)
		assert.Equal(t, "what the server says", apiErr.Detail)
		assert.Len(t, f.requestIDs(), 1, "%s is not retried", tc.a.code)
		if tc.a.retryAfter != "" {
			assert.Equal(t, 3*time.Second, apiErr.RetryAfter)
		}
	}
}

// TestBuyARefusalAfterAnUnknownOutcomeSettlesIt: a retry with the request
// id of a buy that went through returns its order, so sold_out to it means
// no order was made.
func TestBuyARefusalAfterAnUnknownOutcomeSettlesIt(t *testing.T) {
	c, _, _ := setup(t, unavailable, answer{status: 409, code: "sold_out"})
	_, err := c.Buy(t.Context(), 7, 1)
	assert.ErrorIs(t, err, ErrSoldOut)
	var unknown *OutcomeUnknownError
	assert.False(t, errors.As(err, &unknown))

	// A 429 may come before the request id is looked up: still unknown.
	c, _, _ = setup(t, unavailable, answer{status: 429, code: "rate_limited", retryAfter: "1"})
	_, err = c.Buy(t.Context(), 7, 1)
	require.ErrorAs(t, err, &unknown)
	assert.ErrorIs(t, err, ErrRateLimited)
}

func TestBuyStopsWhenItsContextEnds(t *testing.T) {
	c, f, _ := setup(t, unavailable)
	ctx, cancel := context.WithCancel(t.Context())
	c.sleep = func(context.Context, time.Duration) error {
		cancel()
		return ctx.Err()
	}
	_, err := c.Buy(ctx, 7, 1)
	var unknown *OutcomeUnknownError
	require.ErrorAs(t, err, &unknown)
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, err, ErrUnavailable)
	assert.Len(t, f.requestIDs(), 1)
}

func TestIdentityOptions(t *testing.T) {
	for name, tc := range map[string]struct {
		opt    ClientOption
		header string
		want   string
	}{
		"shopper": {WithShopper("alice"), "X-User-ID", "alice"},
		"bearer":  {WithBearer("eyJ.jwt"), "Authorization", "Bearer eyJ.jwt"},
		"admin":   {WithAdminToken("admin-token"), "Authorization", "Bearer admin-token"},
	} {
		f := &fakeShop{t: t, answers: []answer{{status: 202}}}
		srv := httptest.NewServer(f)
		c, err := New(srv.URL, tc.opt)
		require.NoError(t, err)
		_, err = c.Buy(t.Context(), 1, 1)
		require.NoError(t, err, name)
		assert.Equal(t, tc.want, f.headers[0].Get(tc.header), name)
		srv.Close()
	}
	for _, opt := range []ClientOption{WithShopper(""), WithBearer(""), WithAdminToken("")} {
		_, err := New("http://localhost:8080", opt)
		assert.Error(t, err)
	}
}
