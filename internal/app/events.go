package app

import (
	"github.com/seckill/seckill/internal/backoff"
	"github.com/seckill/seckill/internal/config"
	"github.com/seckill/seckill/internal/outbox"
)

// buildEvents makes the dispatcher of order events and its sinks, when
// events are on (events.webhook_url, events.nats_url, events.amqp_url or
// events.kafka_brokers).
func (a *App) buildEvents() error {
	ec := a.Cfg.Events
	metrics := outbox.NewMetrics(a.Registry)
	if !ec.On() {
		return nil
	}
	var sinks []outbox.Sink
	f := outbox.Format{CloudEvents: ec.Format == config.FormatCloudEvents, Source: ec.Source}
	for _, h := range ec.Webhooks() {
		w, err := outbox.NewWebhook(h.Name, h.URL, ec.Secrets(), f, nil)
		if err != nil {
			return err
		}
		sinks = append(sinks, w)
	}
	if ec.NATSURL != "" {
		n, err := outbox.NewNATS(ec.NATSURL, ec.NATSSubject, ec.NATSDuplicateWindow, f, a.Log)
		if err != nil {
			return err
		}
		a.closers = append(a.closers, n.Close)
		sinks = append(sinks, n)
	}
	if kc := ec.Kafka; len(kc.BrokerList()) > 0 {
		tlsc, err := kc.TLSConfig()
		if err != nil {
			return err
		}
		k, err := outbox.NewKafka(outbox.KafkaOptions{Brokers: kc.BrokerList(), Topic: kc.Topic, TLS: tlsc,
			SASL: kc.SASLMechanism, User: kc.SASLUser, Password: kc.SASLPassword, Format: f})
		if err != nil {
			return err
		}
		a.closers = append(a.closers, k.Close)
		sinks = append(sinks, k)
	}
	if ec.AMQPURL != "" {
		q := outbox.NewAMQP(ec.AMQPURL, ec.AMQPExchange, f, a.Log)
		a.closers = append(a.closers, q.Close)
		sinks = append(sinks, q)
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
