package outbox

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/seckill/seckill/internal/webhook"
)

// Webhook is a sink POSTing each event to a URL, signed per Standard
// Webhooks: webhook-id is the event id (the same on every retry), and the
// body is the event (Message, application/json) or, in the CloudEvents
// format, a structured CloudEvent (application/cloudevents+json). A 2xx
// answer acknowledges it; anything else is a refusal.
type Webhook struct {
	name    string
	url     string
	signers []*webhook.Signer
	format  Format
	client  *http.Client
}

// NewWebhook returns the sink of url, named name, signing with every key in
// secrets (whsec_…): the receiver accepts the event if it knows any of
// them, which lets keys rotate; in format f. client nil is
// http.DefaultTransport's settings, keeping up to 1,024 idle connections
// to the receiver, with no redirects followed.
func NewWebhook(name, url string, secrets []string, f Format, client *http.Client) (*Webhook, error) {
	if len(secrets) == 0 {
		return nil, fmt.Errorf("outbox: webhook %s: no signing key", name)
	}
	w := &Webhook{name: name, url: url, format: f, client: client}
	for _, s := range secrets {
		sg, err := webhook.NewSigner(s)
		if err != nil {
			return nil, err
		}
		w.signers = append(w.signers, sg)
	}
	if w.client == nil {
		// Keep a connection per delivery in flight (events.concurrency,
		// at most 1024), where the default keeps two and opens the rest
		// anew for each event.
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 1024
		w.client = &http.Client{Transport: t,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	return w, nil
}

// Name is the receiver's name.
func (w *Webhook) Name() string { return w.name }

// Send POSTs e and waits for a 2xx.
func (w *Webhook) Send(ctx context.Context, e *Event) error {
	body, contentType, err := w.format.structured(e)
	if err != nil {
		return err
	}
	now := time.Now()
	var h http.Header
	var sigs []string
	for _, s := range w.signers {
		hs, err := s.Headers(e.EventID, now, body)
		if err != nil {
			return err
		}
		h = hs
		sigs = append(sigs, hs.Get(webhook.HeaderSignature))
	}
	h.Set(webhook.HeaderSignature, strings.Join(sigs, " "))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header = h
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("User-Agent", "seckill-events")
	resp, err := w.client.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("answered %d", resp.StatusCode)
	}
	return nil
}
