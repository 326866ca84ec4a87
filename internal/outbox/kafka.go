package outbox

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// KafkaName is the receiver name of the Kafka sink.
const KafkaName = "kafka"

// Headers of a Kafka record besides the body: the event's id and type, so
// a consumer drops a redelivery or routes an event without reading it.
const (
	KafkaHeaderID   = "event_id"
	KafkaHeaderType = "event_type"
)

// KafkaOptions configure the Kafka sink.
type KafkaOptions struct {
	Brokers []string // seed brokers, host:port
	Topic   string
	TLS     *tls.Config // nil: plain TCP
	// SASL is the mechanism, "" (none), PLAIN, SCRAM-SHA-256 or
	// SCRAM-SHA-512, with User and Password.
	SASL, User, Password string
	// Format is how events are sent: in CloudEvents, binary mode, the
	// attributes in ce_<attribute> headers and the data as the value.
	Format Format
}

// Kafka is a sink producing each event as a record of one topic, keyed by
// its order id (so one order's events go to one partition), with the event
// as the value and its id and type in headers. The producer is idempotent,
// with acks=all: a record is delivered once every in-sync replica has it,
// and a retry of the client's own is not written twice. A retry of the
// dispatcher's after a lost acknowledgement is a record with the same
// event_id, which a consumer drops.
type Kafka struct {
	cl     *kgo.Client
	topic  string
	format Format
}

// NewKafka returns the sink of o; the client connects on its first send
// and keeps reconnecting, so a broker not up yet holds back only its own
// deliveries.
func NewKafka(o KafkaOptions) (*Kafka, error) {
	opts := []kgo.Opt{
		kgo.SeedBrokers(o.Brokers...),
		kgo.ClientID("seckill-events"),
		kgo.DefaultProduceTopic(o.Topic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(0), // one event waits for no other
	}
	if o.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(o.TLS))
	}
	if o.SASL != "" {
		m, err := mechanism(o.SASL, o.User, o.Password)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.SASL(m))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("outbox: kafka: %w", err)
	}
	return &Kafka{cl: cl, topic: o.Topic, format: o.Format}, nil
}

// mechanism is the SASL mechanism named name.
func mechanism(name, user, password string) (sasl.Mechanism, error) {
	switch strings.ToUpper(name) {
	case "PLAIN":
		return plain.Auth{User: user, Pass: password}.AsMechanism(), nil
	case "SCRAM-SHA-256":
		return scram.Auth{User: user, Pass: password}.AsSha256Mechanism(), nil
	case "SCRAM-SHA-512":
		return scram.Auth{User: user, Pass: password}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("outbox: kafka: unknown SASL mechanism %q", name)
}

// Name is KafkaName.
func (k *Kafka) Name() string { return KafkaName }

// Topic is the topic events are produced to.
func (k *Kafka) Topic() string { return k.topic }

// Send produces e and waits for the brokers' acknowledgement, until ctx
// ends. A record the brokers have not taken by then stays with the client,
// which goes on trying until they do (the dispatcher's retry is a second
// record with the same event_id, after it): records are not failed on a
// timeout, because an idempotent producer that fails records while others
// of their partition keep coming may fail those too, again and again. At
// most MaxBufferedRecords (10,000) wait in the client; past that a send
// fails at once.
func (k *Kafka) Send(ctx context.Context, e *Event) error {
	r, err := k.record(e)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	k.cl.TryProduce(context.Background(), r, func(_ *kgo.Record, err error) { done <- err })
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("no acknowledgement: %w", ctx.Err())
	}
}

// record is e as a Kafka record.
func (k *Kafka) record(e *Event) (*kgo.Record, error) {
	value, attrs, err := k.format.binary(e)
	if err != nil {
		return nil, err
	}
	headers := []kgo.RecordHeader{
		{Key: KafkaHeaderID, Value: []byte(e.EventID)},
		{Key: KafkaHeaderType, Value: []byte(e.Type)},
		{Key: "content-type", Value: []byte(contentJSON)},
	}
	for _, at := range attrs {
		headers = append(headers, kgo.RecordHeader{Key: "ce_" + at.name, Value: []byte(at.value)})
	}
	return &kgo.Record{Key: []byte(e.OrderID), Value: value, Timestamp: e.CreatedAt, Headers: headers}, nil
}

// Close flushes nothing (every send waited for its record) and closes the
// client.
func (k *Kafka) Close() { k.cl.Close() }
