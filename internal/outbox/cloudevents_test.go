package outbox

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/binding/spec"
	cev "github.com/cloudevents/sdk-go/v2/event"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testutil"
	"github.com/seckill/seckill/internal/webhook"
)

// ceFormat is the CloudEvents format of the tests.
var ceFormat = Format{CloudEvents: true, Source: "https://shop.example.com/seckill"}

// checkCloudEvent checks that got, as the CloudEvents SDK read it, is e:
// its id, source, type, subject, time and data.
func checkCloudEvent(t *testing.T, e Event, got *cev.Event) {
	t.Helper()
	require.NoError(t, got.Validate())
	assert.Equal(t, "1.0", got.SpecVersion())
	assert.Equal(t, e.EventID, got.ID())
	assert.Equal(t, ceFormat.Source, got.Source())
	assert.Equal(t, "com.seckill."+e.Type, got.Type())
	assert.Equal(t, e.OrderID, got.Subject())
	assert.True(t, e.CreatedAt.Equal(got.Time()), "time %s, want %s", got.Time(), e.CreatedAt)
	assert.Equal(t, "application/json", got.DataContentType())
	var m Message
	require.NoError(t, json.Unmarshal([]byte(e.Payload), &m))
	assert.JSONEq(t, string(m.Data), string(got.Data()), "the event's data")
}

// binaryMessage is a message of a binary-mode binding as the SDK's
// bindings read one: the attributes in headers named prefix+attribute, the
// data content type in the message's content type, the data as the body.
type binaryMessage struct {
	prefix      string
	headers     map[string]string
	contentType string
	body        []byte
}

func (m binaryMessage) ReadEncoding() binding.Encoding { return binding.EncodingBinary }

// version is the spec version the headers name, nil when none.
func (m binaryMessage) version() spec.Version {
	specs := spec.WithPrefix(m.prefix)
	return specs.Version(m.headers[specs.PrefixedSpecVersionName()])
}

func (m binaryMessage) GetAttribute(k spec.Kind) (spec.Attribute, any) {
	v := m.version()
	if v == nil {
		return nil, nil
	}
	attr := v.AttributeFromKind(k)
	switch {
	case attr == nil:
		return nil, nil
	case k == spec.DataContentType:
		return attr, m.contentType
	}
	if s, ok := m.headers[attr.PrefixedName()]; ok {
		return attr, s
	}
	return attr, nil
}

func (m binaryMessage) GetExtension(name string) any {
	if s, ok := m.headers[m.prefix+name]; ok {
		return s
	}
	return nil
}

func (m binaryMessage) ReadStructured(context.Context, binding.StructuredWriter) error {
	return binding.ErrNotStructured
}

func (m binaryMessage) ReadBinary(_ context.Context, w binding.BinaryWriter) error {
	version := m.version()
	if version == nil {
		return binding.ErrNotBinary
	}
	if err := w.SetAttribute(version.AttributeFromKind(spec.DataContentType), m.contentType); err != nil {
		return err
	}
	for k, v := range m.headers {
		if attr := version.Attribute(k); attr != nil {
			if err := w.SetAttribute(attr, v); err != nil {
				return err
			}
		} else if strings.HasPrefix(k, m.prefix) {
			if err := w.SetExtension(strings.TrimPrefix(k, m.prefix), v); err != nil {
				return err
			}
		}
	}
	return w.SetData(bytes.NewReader(m.body))
}

// A webhook in the CloudEvents format gets a structured CloudEvent
// (application/cloudevents+json) that the SDK reads, signed per Standard
// Webhooks with webhook-id the event id.
func TestCloudEventsToWebhook(t *testing.T) {
	t.Parallel()
	key := secret()
	verifier, err := webhook.NewVerifier([]string{key})
	require.NoError(t, err)
	var mu sync.Mutex
	var got []*cev.Event
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := verifier.Verify(body, r.Header); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		if r.Header.Get("Content-Type") != "application/cloudevents+json" {
			http.Error(w, "content type", http.StatusUnsupportedMediaType)
			return
		}
		ev, err := binding.ToEvent(r.Context(), cehttp.NewMessage(r.Header, io.NopCloser(bytes.NewReader(body))))
		if err != nil || ev.ID() != r.Header.Get("webhook-id") {
			http.Error(w, "not the event", http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		got = append(got, ev)
	}))
	t.Cleanup(srv.Close)
	hook, err := NewWebhook("shop", srv.URL, []string{key}, ceFormat, nil)
	require.NoError(t, err)

	e := event(t, OrderPaid, "A", t0)
	require.NoError(t, hook.Send(t.Context(), &e))
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, 1)
	checkCloudEvent(t, e, got[0])
}

// NATS in the CloudEvents format carries a structured CloudEvent.
func TestCloudEventsToNATS(t *testing.T) {
	t.Parallel()
	srv := testsvc.StartNATS(t)
	n, err := NewNATS(srv.URL(), "seckill", 0, ceFormat, quiet)
	require.NoError(t, err)
	t.Cleanup(n.Close)
	e := event(t, OrderExpired, "A", t0)
	require.NoError(t, n.Send(t.Context(), &e))

	s, err := jetStream(t, srv.URL()).Stream(t.Context(), n.Stream())
	require.NoError(t, err)
	m, err := s.GetMsg(t.Context(), 1)
	require.NoError(t, err)
	assert.Equal(t, "application/cloudevents+json", m.Header.Get("Content-Type"))
	var got cev.Event
	require.NoError(t, json.Unmarshal(m.Data, &got))
	checkCloudEvent(t, e, &got)
}

// Kafka in the CloudEvents format carries a binary-mode CloudEvent: the
// attributes in ce_ headers, the data as the value.
func TestCloudEventsToKafka(t *testing.T) {
	t.Parallel()
	c := newKfake(t, "seckill.orders")
	k, err := NewKafka(KafkaOptions{Brokers: c.ListenAddrs(), Topic: "seckill.orders", Format: ceFormat})
	require.NoError(t, err)
	t.Cleanup(k.Close)
	e := event(t, OrderCreated, "A", t0)
	require.NoError(t, k.Send(t.Context(), &e))

	recs := fetched(t, c, "seckill.orders", func(recs []*kgo.Record) bool { return len(recs) == 1 })
	headers := map[string]string{}
	for _, h := range recs[0].Headers {
		headers[h.Key] = string(h.Value)
	}
	got, err := binding.ToEvent(t.Context(), binaryMessage{prefix: "ce_", headers: headers,
		contentType: headers["content-type"], body: recs[0].Value})
	require.NoError(t, err)
	checkCloudEvent(t, e, got)
	assert.Equal(t, "A", string(recs[0].Key), "still keyed by order")
}

// AMQP in the CloudEvents format carries a binary-mode CloudEvent: the
// attributes in cloudEvents: headers, the data as the body.
func TestCloudEventsToAMQP(t *testing.T) {
	t.Parallel()
	url := testsvc.RabbitMQ(t)
	c := consume(t, url, "seckill.orders")
	a := NewAMQP(url, "seckill.orders", ceFormat, quiet)
	t.Cleanup(a.Close)
	e := event(t, OrderCancelled, "A", t0)
	require.NoError(t, a.Send(t.Context(), &e))

	testutil.Eventually(t, 30*time.Second, "the message", func() bool { return len(c.received()) == 1 })
	m := c.received()[0]
	headers := map[string]string{}
	for k, v := range m.Headers {
		if s, ok := v.(string); ok {
			headers[k] = s
		}
	}
	got, err := binding.ToEvent(t.Context(), binaryMessage{prefix: "cloudEvents:", headers: headers,
		contentType: m.ContentType, body: m.Body})
	require.NoError(t, err)
	checkCloudEvent(t, e, got)
	assert.Equal(t, e.EventID, m.MessageId)
}
