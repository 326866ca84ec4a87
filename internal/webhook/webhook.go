// Package webhook signs and verifies webhooks per the Standard Webhooks
// specification (standardwebhooks.com): headers webhook-id,
// webhook-timestamp and webhook-signature, the last "v1,<base64 of
// HMAC-SHA256 of id.timestamp.body>", with whsec_<base64> keys and a
// 5-minute timestamp tolerance. The signing is the specification's own Go
// library; this package adds several keys at once, for a rotation.
package webhook

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// ErrSignature is a request that is not signed with any of the keys: a
// header missing or malformed, no matching signature, or a timestamp more
// than 5 minutes away.
var ErrSignature = errors.New("webhook signature not valid")

// The headers of a signed webhook.
const (
	HeaderID        = standardwebhooks.HeaderWebhookID
	HeaderTimestamp = standardwebhooks.HeaderWebhookTimestamp
	HeaderSignature = standardwebhooks.HeaderWebhookSignature
)

// Verifier verifies webhooks signed with any of its keys.
type Verifier struct {
	hooks []*standardwebhooks.Webhook
}

// NewVerifier returns a Verifier of the whsec_<base64> keys.
func NewVerifier(secrets []string) (*Verifier, error) {
	if len(secrets) == 0 {
		return nil, errors.New("webhook: no key")
	}
	v := &Verifier{}
	for i, s := range secrets {
		wh, err := standardwebhooks.NewWebhook(s)
		if err != nil {
			return nil, fmt.Errorf("webhook: key %d is not whsec_<base64>", i+1)
		}
		v.hooks = append(v.hooks, wh)
	}
	return v, nil
}

// Verify returns nil when body and h are signed with one of the keys and
// timestamped within 5 minutes of now, ErrSignature (wrapping why) when not.
func (v *Verifier) Verify(body []byte, h http.Header) error {
	var last error
	for _, wh := range v.hooks {
		if last = wh.Verify(body, h); last == nil {
			return nil
		}
	}
	return fmt.Errorf("%w: %w", ErrSignature, last)
}

// Signer signs webhooks with one key.
type Signer struct {
	wh *standardwebhooks.Webhook
}

// NewSigner returns a Signer of the whsec_<base64> key.
func NewSigner(secret string) (*Signer, error) {
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		return nil, errors.New("webhook: the key is not whsec_<base64>")
	}
	return &Signer{wh: wh}, nil
}

// Headers returns the headers of body sent as webhook id at ts.
func (s *Signer) Headers(id string, ts time.Time, body []byte) (http.Header, error) {
	sig, err := s.wh.Sign(id, ts, body)
	if err != nil {
		return nil, fmt.Errorf("webhook: sign: %w", err)
	}
	h := http.Header{}
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, fmt.Sprint(ts.Unix()))
	h.Set(HeaderSignature, sig)
	return h, nil
}
