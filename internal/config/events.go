package config

import (
	"net/url"
	"strings"
	"time"
)

// Events configures the order events seckill sends the shop (internal/outbox):
// off unless a webhook URL or a NATS URL is set.
type Events struct {
	// WebhookURL is one or more receivers, comma-separated; each gets
	// every event, signed with WebhookSecret (Standard Webhooks).
	WebhookURL    string `mapstructure:"webhook_url"`
	WebhookSecret string `mapstructure:"webhook_secret"`
	// NATSURL is a NATS server with JetStream; events are published on
	// NATSSubject.<type>, with the event id as the message id.
	NATSURL     string        `mapstructure:"nats_url"`
	NATSSubject string        `mapstructure:"nats_subject"`
	Timeout     time.Duration `mapstructure:"timeout"`     // one delivery to one sink
	MaxAge      time.Duration `mapstructure:"max_age"`     // retried this long, then dead
	BackoffMin  time.Duration `mapstructure:"backoff_min"` // first retry's delay
	BackoffMax  time.Duration `mapstructure:"backoff_max"` // cap on a retry's delay
	Retention   time.Duration `mapstructure:"retention"`   // delivered events are deleted after this
	Concurrency int           `mapstructure:"concurrency"` // deliveries in flight per process
}

// On reports whether events are written and sent.
func (e Events) On() bool { return len(e.WebhookURLs()) > 0 || e.NATSURL != "" }

// WebhookURLs returns the receivers, one per comma-separated entry.
func (e Events) WebhookURLs() []string { return splitList(e.WebhookURL) }

// Secrets returns the signing keys: the first signs; more are for a
// receiver that accepts any of them during a rotation.
func (e Events) Secrets() []string { return splitList(e.WebhookSecret) }

func (e Events) validate() error {
	urls := e.WebhookURLs()
	if len(urls) > 16 {
		return &Error{Key: "events.webhook_url", Allowed: "at most 16 receivers"}
	}
	for _, u := range urls {
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return &Error{Key: "events.webhook_url", Value: u, Allowed: "http:// or https:// URLs, comma-separated"}
		}
	}
	secrets := e.Secrets()
	switch {
	case len(urls) > 0 && len(secrets) == 0:
		return &Error{Key: "events.webhook_secret", Allowed: "events.webhook_url needs a whsec_<base64> key to sign with"}
	case len(urls) == 0 && len(secrets) > 0:
		return &Error{Key: "events.webhook_secret", Allowed: "is set, but events.webhook_url is not"}
	}
	if err := webhookKeys("events.webhook_secret", secrets); err != nil {
		return err
	}
	if e.NATSURL != "" {
		for _, u := range strings.Split(e.NATSURL, ",") {
			p, err := url.Parse(strings.TrimSpace(u))
			if err != nil || (p.Scheme != "nats" && p.Scheme != "tls") || p.Host == "" {
				return &Error{Key: "events.nats_url", Value: u, Allowed: "nats:// or tls:// URLs, comma-separated"}
			}
		}
	}
	checks := []error{
		subject("events.nats_subject", e.NATSSubject),
		between("events.concurrency", int64(e.Concurrency), 1, 1024),
		positive("events.timeout", e.Timeout),
		atLeast("events.max_age", e.MaxAge, time.Minute),
		positive("events.backoff_min", e.BackoffMin),
		positive("events.backoff_max", e.BackoffMax),
		atLeast("events.retention", e.Retention, time.Hour),
	}
	for _, err := range checks {
		if err != nil {
			return err
		}
	}
	if e.BackoffMax < e.BackoffMin {
		return &Error{Key: "events.backoff_max", Value: e.BackoffMax.String(), Allowed: "must not be below events.backoff_min"}
	}
	return nil
}

// subject checks a NATS subject prefix: tokens of letters, digits, - and _
// separated by dots.
func subject(key, s string) error {
	ok := s != "" && len(s) <= 64
	for _, tok := range strings.Split(s, ".") {
		ok = ok && tok != "" && strings.Trim(tok, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") == ""
	}
	if !ok {
		return &Error{Key: key, Value: s, Allowed: "up to 64 characters: tokens of letters, digits, - and _ separated by dots"}
	}
	return nil
}
