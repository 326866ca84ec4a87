package testutil

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"
)

// Caller sends requests to seckill instances as a test's shoppers and admin
// do, for what the generated client cannot send or read: bodies the API
// refuses, answers read as raw text, and the time each one took.
type Caller struct {
	HTTP *http.Client
	// AdminToken is sent as a bearer token on every /admin path.
	AdminToken string
	// UserToken, when set, identifies a shopper by the bearer token it
	// returns instead of by X-User-ID.
	UserToken func(user string) string
}

// Reply is an instance's answer: its status, headers and body, the body
// decoded when it is a JSON object, and when the request was sent and how
// long the answer took.
type Reply struct {
	Status int
	Header http.Header
	Raw    string
	Body   map[string]any
	Start  time.Time
	Took   time.Duration
}

// NewReply reads an answer the generated client already received.
func NewReply(resp *http.Response, body []byte) Reply {
	r := Reply{Status: resp.StatusCode, Header: resp.Header, Raw: string(body)}
	_ = json.Unmarshal(body, &r.Body)
	return r
}

// Str is the body's string field k ("" when absent or not a string).
func (r Reply) Str(k string) string { s, _ := r.Body[k].(string); return s }

// Num is the body's number field k (0 when absent or not a number).
func (r Reply) Num(k string) int64 { f, _ := r.Body[k].(float64); return int64(f) }

// Request builds method path on base as user (no shopper when empty) with
// body: nil for none, a string as it is, anything else encoded as JSON.
func (c Caller) Request(base, method, path, user string, body any) (*http.Request, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		buf, err := json.Marshal(b)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(buf)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	switch {
	case user != "" && c.UserToken != nil:
		req.Header.Set("Authorization", "Bearer "+c.UserToken(user))
	case user != "":
		req.Header.Set("X-User-ID", user)
	}
	if strings.HasPrefix(path, "/admin") {
		req.Header.Set("Authorization", "Bearer "+c.AdminToken)
	}
	return req, nil
}

// Do sends the request Request builds and reads the answer. On a transport
// error the Reply still says when the request was sent and how long it
// waited.
func (c Caller) Do(base, method, path, user string, body any) (Reply, error) {
	req, err := c.Request(base, method, path, user, body)
	if err != nil {
		return Reply{}, err
	}
	return c.Send(req)
}

// Send sends req and reads the answer.
func (c Caller) Send(req *http.Request) (Reply, error) {
	start := time.Now()
	resp, err := c.HTTP.Do(req) //nolint:gosec // the instance the test started
	if err != nil {
		return Reply{Start: start, Took: time.Since(start)}, err
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	r := NewReply(resp, raw)
	r.Start, r.Took = start, time.Since(start)
	return r, err
}
