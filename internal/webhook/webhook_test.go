package webhook

import (
	"encoding/base64"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func key(b byte) string {
	raw := make([]byte, 32)
	for i := range raw {
		raw[i] = b
	}
	return "whsec_" + base64.StdEncoding.EncodeToString(raw)
}

func TestVerify(t *testing.T) {
	body := []byte(`{"type":"payment.succeeded"}`)
	old, cur := key(1), key(2)
	v, err := NewVerifier([]string{old, cur})
	require.NoError(t, err)
	sign := func(secret string, ts time.Time) http.Header {
		s, err := NewSigner(secret)
		require.NoError(t, err)
		h, err := s.Headers("msg_1", ts, body)
		require.NoError(t, err)
		return h
	}
	now := time.Now()
	assert.NoError(t, v.Verify(body, sign(cur, now)))
	assert.NoError(t, v.Verify(body, sign(old, now)), "the key being rotated out is still accepted")

	for name, h := range map[string]http.Header{
		"another key":              sign(key(3), now),
		"six minutes old":          sign(cur, now.Add(-6*time.Minute)),
		"six minutes ahead":        sign(cur, now.Add(6*time.Minute)),
		"no headers":               {},
		"no signature":             func() http.Header { h := sign(cur, now); h.Del(HeaderSignature); return h }(),
		"a timestamp not a number": func() http.Header { h := sign(cur, now); h.Set(HeaderTimestamp, "soon"); return h }(),
		"another id":               func() http.Header { h := sign(cur, now); h.Set(HeaderID, "msg_2"); return h }(),
	} {
		assert.ErrorIs(t, v.Verify(body, h), ErrSignature, name)
	}
	assert.ErrorIs(t, v.Verify([]byte(`{"type":"payment.succeeded" }`), sign(cur, now)), ErrSignature, "another body")

	_, err = NewVerifier([]string{"whsec_!!"})
	assert.Error(t, err)
	_, err = NewVerifier(nil)
	assert.Error(t, err)
}
