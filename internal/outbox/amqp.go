package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// AMQPName is the receiver name of the AMQP sink.
const AMQPName = "amqp"

// AMQP is a sink publishing each event to a RabbitMQ (AMQP 0-9-1) durable
// topic exchange, with the event type as routing key (order.created), as a
// persistent message whose message-id is the event id (the same on every
// retry, so a consumer drops a redelivery by it). The publish is done once
// the broker confirms it (publisher confirms): RabbitMQ has then routed it
// to every queue bound to the exchange that takes its routing key, and a
// message no queue takes is dropped by RabbitMQ, so the queues are bound
// before events are turned on. The exchange is declared on every
// connection; the connection is made again after it is lost.
type AMQP struct {
	url      string
	exchange string
	format   Format
	log      *slog.Logger

	mu   sync.Mutex // guards conn and ch
	conn *amqp.Connection
	ch   *amqp.Channel // in confirm mode
}

// NewAMQP returns the sink of exchange on the broker at url
// (amqp://user:password@host:port/vhost, or amqps://); it connects on its
// first send, so a broker not up yet holds back only its own deliveries.
// Events are sent in format f: in CloudEvents, binary mode, the attributes
// in headers named cloudEvents:<attribute> and the data as the body.
func NewAMQP(url, exchange string, f Format, log *slog.Logger) *AMQP {
	return &AMQP{url: url, exchange: exchange, format: f, log: log}
}

// Name is AMQPName.
func (a *AMQP) Name() string { return AMQPName }

// Send publishes e and waits for the broker's confirmation.
func (a *AMQP) Send(ctx context.Context, e *Event) error {
	ch, err := a.channel(ctx)
	if err != nil {
		return err
	}
	msg, err := a.publishing(e)
	if err != nil {
		return err
	}
	dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, a.exchange, e.Type, false, false, msg)
	if err != nil {
		a.drop(ch)
		return fmt.Errorf("publish: %w", err)
	}
	acked, err := dc.WaitContext(ctx)
	switch {
	case err != nil:
		return fmt.Errorf("publish: no confirmation: %w", err)
	case !acked && ch.IsClosed():
		return errors.New("publish: the channel closed before the broker confirmed")
	case !acked:
		return errors.New("publish: refused by the broker (nack)")
	}
	return nil
}

// publishing is e as an AMQP message.
func (a *AMQP) publishing(e *Event) (amqp.Publishing, error) {
	body, attrs, err := a.format.binary(e)
	if err != nil {
		return amqp.Publishing{}, err
	}
	headers := amqp.Table{"order_id": e.OrderID}
	for _, at := range attrs {
		headers["cloudEvents:"+at.name] = at.value
	}
	return amqp.Publishing{
		ContentType:  contentJSON,
		DeliveryMode: amqp.Persistent,
		MessageId:    e.EventID,
		Type:         e.Type,
		Timestamp:    e.CreatedAt,
		AppId:        "seckill",
		Headers:      headers,
		Body:         body,
	}, nil
}

// channel returns the open confirm-mode channel, connecting first when
// there is none (or it was closed).
func (a *AMQP) channel(ctx context.Context) (*amqp.Channel, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ch != nil && !a.ch.IsClosed() {
		return a.ch, nil
	}
	if a.conn != nil {
		_ = a.conn.Close()
		a.conn, a.ch = nil, nil
	}
	deadline, ok := ctx.Deadline()
	timeout := 10 * time.Second
	if ok {
		timeout = time.Until(deadline)
	}
	conn, err := amqp.DialConfig(a.url, amqp.Config{
		Properties: amqp.Table{"connection_name": "seckill-events"},
		Dial:       amqp.DefaultDial(timeout),
	})
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	ch, err := open(conn, a.exchange)
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	closed := conn.NotifyClose(make(chan *amqp.Error, 1))
	go func() {
		if err := <-closed; err != nil {
			a.log.Warn("events: amqp connection lost", "err", err.Error())
		}
	}()
	a.conn, a.ch = conn, ch
	return ch, nil
}

// open opens a channel of conn in confirm mode and declares exchange on it,
// a durable topic exchange.
func open(conn *amqp.Connection, exchange string) (*amqp.Channel, error) {
	ch, err := conn.Channel()
	if err != nil {
		return nil, fmt.Errorf("open channel: %w", err)
	}
	if err := ch.Confirm(false); err != nil {
		return nil, fmt.Errorf("confirm mode: %w", err)
	}
	if err := ch.ExchangeDeclare(exchange, amqp.ExchangeTopic, true, false, false, false, nil); err != nil {
		return nil, fmt.Errorf("declare exchange %s: %w", exchange, err)
	}
	return ch, nil
}

// drop closes the connection of ch, if it is still the current one, so
// that the next send connects again.
func (a *AMQP) drop(ch *amqp.Channel) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ch == ch && a.conn != nil {
		_ = a.conn.Close()
		a.conn, a.ch = nil, nil
	}
}

// Close closes the connection.
func (a *AMQP) Close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.conn != nil {
		_ = a.conn.Close()
		a.conn, a.ch = nil, nil
	}
}
