package outbox

import (
	"encoding/json"
	"fmt"
	"time"
)

// Format is how a sink puts an event on the wire: seckill's own envelope
// (Message, the zero Format), or CloudEvents 1.0.
type Format struct {
	// CloudEvents sends CloudEvents 1.0: structured mode (a JSON object
	// of the attributes and data, application/cloudevents+json) to
	// webhooks and NATS, binary mode (attributes in headers, the data as
	// the body) to Kafka and AMQP.
	CloudEvents bool
	// Source is the source attribute: the seckill deployment.
	Source string
}

// Content types of a body.
const (
	contentJSON        = "application/json"
	contentCloudEvents = "application/cloudevents+json"
)

// CloudEventsType is the CloudEvents type of event type typ:
// com.seckill.order.created.
func CloudEventsType(typ string) string { return "com.seckill." + typ }

// cloudEvent is an event as a CloudEvent: its attributes and its data.
type cloudEvent struct {
	SpecVersion     string          `json:"specversion"`
	ID              string          `json:"id"`
	Source          string          `json:"source"`
	Type            string          `json:"type"`
	Subject         string          `json:"subject"`
	Time            time.Time       `json:"time"`
	DataContentType string          `json:"datacontenttype"`
	Data            json.RawMessage `json:"data"`
}

// cloudEvent is e as a CloudEvent: id the event id, subject the order id,
// time its creation, data the data of its Message.
func (f Format) cloudEvent(e *Event) (cloudEvent, error) {
	var m Message
	if err := json.Unmarshal([]byte(e.Payload), &m); err != nil {
		return cloudEvent{}, fmt.Errorf("outbox: event %s: %w", e.EventID, err)
	}
	return cloudEvent{SpecVersion: "1.0", ID: e.EventID, Source: f.Source, Type: CloudEventsType(e.Type),
		Subject: e.OrderID, Time: e.CreatedAt.UTC(), DataContentType: contentJSON, Data: m.Data}, nil
}

// structured returns e as one body and its content type: the event as
// stored (application/json), or a structured CloudEvent.
func (f Format) structured(e *Event) ([]byte, string, error) {
	if !f.CloudEvents {
		return []byte(e.Payload), contentJSON, nil
	}
	ce, err := f.cloudEvent(e)
	if err != nil {
		return nil, "", err
	}
	b, err := json.Marshal(ce)
	if err != nil {
		return nil, "", fmt.Errorf("outbox: event %s: %w", e.EventID, err)
	}
	return b, contentCloudEvents, nil
}

// binary returns e as a body and its attributes, for a binary-mode
// binding to put in headers named by prefixing each name: nil attributes
// and the event as stored when f is not CloudEvents.
func (f Format) binary(e *Event) ([]byte, []attribute, error) {
	if !f.CloudEvents {
		return []byte(e.Payload), nil, nil
	}
	ce, err := f.cloudEvent(e)
	if err != nil {
		return nil, nil, err
	}
	return ce.Data, []attribute{
		{"specversion", ce.SpecVersion},
		{"id", ce.ID},
		{"source", ce.Source},
		{"type", ce.Type},
		{"subject", ce.Subject},
		{"time", ce.Time.Format(time.RFC3339Nano)},
	}, nil
}

// attribute is a CloudEvents context attribute, by name.
type attribute struct{ name, value string }
