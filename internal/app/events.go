package app

import (
	"github.com/seckill/seckill/internal/backoff"
	"github.com/seckill/seckill/internal/outbox"
)

// buildEvents makes the dispatcher of order events and its sinks, when
// events are on (events.webhook_url or events.nats_url).
func (a *App) buildEvents() error {
	ec := a.Cfg.Events
	metrics := outbox.NewMetrics(a.Registry)
	if !ec.On() {
		return nil
	}
	var sinks []outbox.Sink
	for _, h := range ec.Webhooks() {
		w, err := outbox.NewWebhook(h.Name, h.URL, ec.Secrets(), nil)
		if err != nil {
			return err
		}
		sinks = append(sinks, w)
	}
	if ec.NATSURL != "" {
		n, err := outbox.NewNATS(ec.NATSURL, ec.NATSSubject, a.Log)
		if err != nil {
			return err
		}
		a.closers = append(a.closers, n.Close)
		sinks = append(sinks, n)
	}
	a.events = outbox.NewDispatcher(a.DB, outbox.Options{
		Sinks:       sinks,
		Concurrency: ec.Concurrency,
		Timeout:     ec.Timeout,
		MaxAge:      ec.MaxAge,
		Backoff:     backoff.Exponential{Min: ec.BackoffMin, Max: ec.BackoffMax},
		Retention:   ec.Retention,
		Log:         a.Log,
		Metrics:     metrics,
	})
	return nil
}
