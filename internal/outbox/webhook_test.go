package outbox

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/webhook"
)

// request is what a receiver got.
type request struct {
	header http.Header
	body   []byte
}

// receiver is a webhook endpoint answering status and keeping what it got.
type receiver struct {
	mu     sync.Mutex
	status int
	got    []request
}

func newReceiver(t *testing.T, status int) (*receiver, *httptest.Server) {
	r := &receiver{status: status}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.got = append(r.got, request{req.Header.Clone(), body})
		w.WriteHeader(r.status)
	}))
	t.Cleanup(srv.Close)
	return r, srv
}

func (r *receiver) requests() []request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]request(nil), r.got...)
}

// The webhook is signed per Standard Webhooks: webhook-id is the event id
// (the same on a retry), the body is the event as stored, and a receiver
// holding the key verifies it with internal/webhook.
func TestWebhookIsSignedWithTheEventID(t *testing.T) {
	rec, srv := newReceiver(t, http.StatusNoContent)
	key := secret()
	hook, err := NewWebhook("shop", srv.URL, []string{key}, Format{}, nil)
	require.NoError(t, err)
	e := event(t, OrderCreated, "A", t0)

	require.NoError(t, hook.Send(t.Context(), &e))
	require.NoError(t, hook.Send(t.Context(), &e), "again, as a retry")

	verifier, err := webhook.NewVerifier([]string{key})
	require.NoError(t, err)
	got := rec.requests()
	require.Len(t, got, 2)
	for _, r := range got {
		assert.Equal(t, e.EventID, r.header.Get(webhook.HeaderID))
		assert.Equal(t, e.Payload, string(r.body))
		assert.Equal(t, "application/json", r.header.Get("Content-Type"))
		assert.NoError(t, verifier.Verify(r.body, r.header))
	}

	stranger, err := webhook.NewVerifier([]string{secret()})
	require.NoError(t, err)
	assert.ErrorIs(t, stranger.Verify(got[0].body, got[0].header), webhook.ErrSignature, "another key does not verify")
	tampered := append([]byte(nil), got[0].body...)
	tampered[len(tampered)-2] ^= 1
	assert.ErrorIs(t, verifier.Verify(tampered, got[0].header), webhook.ErrSignature, "a changed body does not verify")
}

// With two keys (a rotation) the webhook carries both signatures, space
// separated, and a receiver knowing either key alone accepts it.
func TestWebhookSignedWithTwoKeysVerifiesWithEither(t *testing.T) {
	rec, srv := newReceiver(t, http.StatusOK)
	old, fresh := secret(), secret()
	hook, err := NewWebhook("shop", srv.URL, []string{old, fresh}, Format{}, nil)
	require.NoError(t, err)
	e := event(t, OrderPaid, "A", t0)
	require.NoError(t, hook.Send(t.Context(), &e))

	got := rec.requests()
	require.Len(t, got, 1)
	sigs := strings.Fields(got[0].header.Get(webhook.HeaderSignature))
	require.Len(t, sigs, 2)
	for _, s := range sigs {
		assert.True(t, strings.HasPrefix(s, "v1,"), s)
	}
	for name, keys := range map[string][]string{"old": {old}, "fresh": {fresh}, "both": {fresh, old}} {
		v, err := webhook.NewVerifier(keys)
		require.NoError(t, err)
		assert.NoError(t, v.Verify(got[0].body, got[0].header), "verifier with the %s key", name)
	}
}

// Only a 2xx acknowledges an event; any other answer is a refusal.
func TestWebhookRefusedUnless2xx(t *testing.T) {
	e := event(t, OrderCreated, "A", t0)
	for _, status := range []int{200, 201, 202, 204, 299} {
		_, srv := newReceiver(t, status)
		hook, err := NewWebhook("shop", srv.URL, []string{secret()}, Format{}, nil)
		require.NoError(t, err)
		assert.NoError(t, hook.Send(t.Context(), &e), "%d", status)
	}
	for _, status := range []int{300, 304, 400, 401, 404, 409, 429, 500, 502, 503} {
		_, srv := newReceiver(t, status)
		hook, err := NewWebhook("shop", srv.URL, []string{secret()}, Format{}, nil)
		require.NoError(t, err)
		assert.Error(t, hook.Send(t.Context(), &e), "%d", status)
	}

	hook, err := NewWebhook("shop", "http://127.0.0.1:1/nobody", []string{secret()}, Format{}, nil)
	require.NoError(t, err)
	assert.Error(t, hook.Send(t.Context(), &e), "no receiver")
}

// A redirect is not followed: it is a refusal, and the event goes nowhere
// else.
func TestWebhookDoesNotFollowRedirects(t *testing.T) {
	elsewhere, target := newReceiver(t, http.StatusOK)
	for _, status := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target.URL, status)
		}))
		t.Cleanup(srv.Close)
		hook, err := NewWebhook("shop", srv.URL, []string{secret()}, Format{}, nil)
		require.NoError(t, err)
		e := event(t, OrderCreated, "A", t0)
		assert.Error(t, hook.Send(t.Context(), &e), "%d", status)
	}
	assert.Empty(t, elsewhere.requests(), "nothing reached the redirect's target")
}

// A webhook needs a signing key, and a key that is not whsec_<base64> is
// refused up front.
func TestWebhookNeedsValidKeys(t *testing.T) {
	_, err := NewWebhook("shop", "http://127.0.0.1:1/", nil, Format{}, nil)
	assert.Error(t, err)
	_, err = NewWebhook("shop", "http://127.0.0.1:1/", []string{secret(), "whsec_not base64!"}, Format{}, nil)
	assert.Error(t, err)
}
