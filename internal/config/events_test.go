package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const eventsKey = "whsec_c2Vja2lsbC1ldmVudHMta2V5LTAxMjM0NTY3ODlhYmM="

// Each entry of events.webhook_url is a receiver, named as the entry says
// (name=URL) or after its URL's host and path: the name its delivery state
// is kept under, so it does not move with a query string or a scheme.
func TestWebhookReceiversAreNamed(t *testing.T) {
	c, err := Load("", env(map[string]string{
		"SECKILL_EVENTS_WEBHOOK_URL": "https://shop.example.com/hooks/seckill/?token=x, crm=http://10.0.0.7:8080/in," +
			" http://shop.example.com:8443, https://b.example/a%20b",
		"SECKILL_EVENTS_WEBHOOK_SECRET": eventsKey,
		"SECKILL_EVENTS_NATS_URL":       "nats://nats:4222",
	}))
	require.NoError(t, err)
	assert.Equal(t, []Webhook{
		{Name: "shop.example.com/hooks/seckill", URL: "https://shop.example.com/hooks/seckill/?token=x"},
		{Name: "crm", URL: "http://10.0.0.7:8080/in"},
		{Name: "shop.example.com:8443", URL: "http://shop.example.com:8443"},
		{Name: "b.example/a%20b", URL: "https://b.example/a%20b"},
	}, c.Events.Webhooks())
	assert.Equal(t, []string{"https://shop.example.com/hooks/seckill/?token=x", "http://10.0.0.7:8080/in",
		"http://shop.example.com:8443", "https://b.example/a%20b"}, c.Events.WebhookURLs())
}

// A receiver name that is not one, or two receivers of one name, is a bad
// events.webhook_url, named with what it accepts.
func TestBadReceiverNamesNameTheKey(t *testing.T) {
	long := "https://shop.example.com/" + strings.Repeat("p", 120)
	for _, urls := range []string{
		"https://a.example/x, https://a.example/x?other",
		"http://a.example/x,https://a.example/x/",
		"shop=https://a.example/x,shop=https://b.example/y",
		"nats=https://a.example/x",
		"http://nats",
		"-shop=https://a.example/x",
		"sh op=https://a.example/x",
		"shop!=https://a.example/x",
		"=https://a.example/x",
		"shop=",
		"shop=ftp://a.example/x",
		strings.Repeat("n", 65) + "=https://a.example/x",
		long,
	} {
		_, err := Load("", env(map[string]string{
			"SECKILL_EVENTS_WEBHOOK_URL":    urls,
			"SECKILL_EVENTS_WEBHOOK_SECRET": eventsKey,
			"SECKILL_EVENTS_NATS_URL":       "nats://nats:4222",
		}))
		var ce *Error
		require.True(t, errors.As(err, &ce), "%q: %v", urls, err)
		assert.Equal(t, "events.webhook_url", ce.Key, "%q: %v", urls, err)
	}
	c, err := Load("", env(map[string]string{
		"SECKILL_EVENTS_WEBHOOK_URL":    "shop=" + long + ",nats=https://a.example/x",
		"SECKILL_EVENTS_WEBHOOK_SECRET": eventsKey,
	}))
	require.NoError(t, err, "a long URL is named; nats is free without NATS")
	assert.Equal(t, "shop", c.Events.Webhooks()[0].Name)
}

// FuzzEventReceivers: whatever events.webhook_url holds, Load refuses it
// naming the key, or every receiver has a URL and a name of 1 to 128
// printable ASCII characters, unique among the receivers.
func FuzzEventReceivers(f *testing.F) {
	for _, s := range []string{
		"https://shop.example.com/hooks",
		"shop=https://a.example/x, crm=http://b.example:8080/y?k=v",
		"https://a.example/x,https://a.example/x?z",
		"a=b=https://x",
		"http://[::1]:80/p",
		"=,,= , http://%41/",
		"http://h/\x7f",
		"nats=http://h",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, urls string) {
		c, err := Load("", env(map[string]string{"SECKILL_EVENTS_WEBHOOK_URL": urls, "SECKILL_EVENTS_WEBHOOK_SECRET": eventsKey}))
		checkLoaded(t, c, err, "")
		if err != nil {
			var ce *Error
			if errors.As(err, &ce) && ce.Key != "events.webhook_url" && ce.Key != "events.webhook_secret" {
				t.Fatalf("%q: refused under %s", urls, ce.Key)
			}
			return
		}
		seen := map[string]bool{}
		for _, w := range c.Events.Webhooks() {
			if w.URL == "" || !plainName(w.Name) || seen[w.Name] {
				t.Fatalf("%q: receiver %+v", urls, w)
			}
			seen[w.Name] = true
		}
	})
}

// events.amqp_url turns events on with a receiver named amqp, which no
// webhook may take; a bad URL is refused naming the key without repeating
// the URL, which holds a password; the exchange is checked too.
func TestAMQPSettings(t *testing.T) {
	c, err := Load("", env(map[string]string{"SECKILL_EVENTS_AMQP_URL": "amqp://shop:s3cret@rabbit:5672/prod"}))
	require.NoError(t, err)
	assert.True(t, c.Events.On())
	assert.Equal(t, "seckill.orders", c.Events.AMQPExchange)

	for _, bad := range []string{"http://shop:s3cret@rabbit/", "amqp://shop:s3cret@/prod", "shop:s3cret@rabbit", "amqp://shop:s3cret@rab bit/"} {
		_, err := Load("", env(map[string]string{"SECKILL_EVENTS_AMQP_URL": bad}))
		var ce *Error
		require.True(t, errors.As(err, &ce), "%q: %v", bad, err)
		assert.Equal(t, "events.amqp_url", ce.Key)
		assert.NotContains(t, err.Error(), "s3cret")
	}
	for _, bad := range []string{"amq.topic", "a b", strings.Repeat("x", 128), "shop/orders"} {
		_, err := Load("", env(map[string]string{"SECKILL_EVENTS_AMQP_URL": "amqp://rabbit/", "SECKILL_EVENTS_AMQP_EXCHANGE": bad}))
		var ce *Error
		require.True(t, errors.As(err, &ce), "%q: %v", bad, err)
		assert.Equal(t, "events.amqp_exchange", ce.Key)
	}
	_, err = Load("", env(map[string]string{
		"SECKILL_EVENTS_AMQP_URL":       "amqp://rabbit/",
		"SECKILL_EVENTS_WEBHOOK_URL":    "amqp=https://a.example/x",
		"SECKILL_EVENTS_WEBHOOK_SECRET": eventsKey,
	}))
	var ce *Error
	require.True(t, errors.As(err, &ce), "%v", err)
	assert.Equal(t, "events.webhook_url", ce.Key, "amqp is the AMQP receiver's name")
}

// The NATS duplicate window must cover a retry: the longest back-off, a
// send that timed out and a lease that ended (events.timeout each), with
// room to spare.
func TestNATSDuplicateWindow(t *testing.T) {
	c, err := Load("", env(map[string]string{"SECKILL_EVENTS_NATS_URL": "nats://nats:4222"}))
	require.NoError(t, err)
	assert.Equal(t, time.Hour, c.Events.NATSDuplicateWindow)
	for _, kv := range []map[string]string{
		{"SECKILL_EVENTS_NATS_DUPLICATE_WINDOW": "5m"},
		{"SECKILL_EVENTS_NATS_DUPLICATE_WINDOW": "30m", "SECKILL_EVENTS_BACKOFF_MAX": "1h"},
		{"SECKILL_EVENTS_NATS_DUPLICATE_WINDOW": "200h"},
	} {
		kv["SECKILL_EVENTS_NATS_URL"] = "nats://nats:4222"
		_, err := Load("", env(kv))
		var ce *Error
		require.True(t, errors.As(err, &ce), "%v: %v", kv, err)
		assert.Equal(t, "events.nats_duplicate_window", ce.Key)
	}
	_, err = Load("", env(map[string]string{"SECKILL_EVENTS_NATS_DUPLICATE_WINDOW": "5m"}))
	require.NoError(t, err, "not checked without NATS")
}

// events.kafka_brokers turns events on with a receiver named kafka; each
// Kafka setting is checked, and the SASL password never shown.
func TestKafkaSettings(t *testing.T) {
	c, err := Load("", env(map[string]string{"SECKILL_EVENTS_KAFKA_BROKERS": "k1:9092, k2:9092"}))
	require.NoError(t, err)
	assert.True(t, c.Events.On())
	assert.Equal(t, []string{"k1:9092", "k2:9092"}, c.Events.Kafka.BrokerList())
	assert.Equal(t, "seckill.orders", c.Events.Kafka.Topic)
	tlsc, err := c.Events.Kafka.TLSConfig()
	require.NoError(t, err)
	assert.Nil(t, tlsc)

	for key, kv := range map[string]map[string]string{
		"events.kafka_brokers":         {"SECKILL_EVENTS_KAFKA_BROKERS": "k1"},
		"events.kafka_topic":           {"SECKILL_EVENTS_KAFKA_TOPIC": "orders/all"},
		"events.kafka_tls_ca_file":     {"SECKILL_EVENTS_KAFKA_TLS": "true", "SECKILL_EVENTS_KAFKA_TLS_CA_FILE": "/nonexistent/ca.pem"},
		"events.kafka_sasl_mechanism":  {"SECKILL_EVENTS_KAFKA_SASL_MECHANISM": "GSSAPI"},
		"events.kafka_sasl_user":       {"SECKILL_EVENTS_KAFKA_SASL_MECHANISM": "SCRAM-SHA-512", "SECKILL_EVENTS_KAFKA_SASL_PASSWORD": "s3cret"},
		"events.kafka_sasl_password":   {"SECKILL_EVENTS_KAFKA_SASL_MECHANISM": "PLAIN", "SECKILL_EVENTS_KAFKA_SASL_USER": "shop"},
		"events.kafka_sasl_mechanism ": {"SECKILL_EVENTS_KAFKA_SASL_PASSWORD": "s3cret"},
	} {
		if kv["SECKILL_EVENTS_KAFKA_BROKERS"] == "" {
			kv["SECKILL_EVENTS_KAFKA_BROKERS"] = "k1:9092"
		}
		_, err := Load("", env(kv))
		var ce *Error
		require.True(t, errors.As(err, &ce), "%v: %v", kv, err)
		assert.Equal(t, strings.TrimSpace(key), ce.Key, "%v", kv)
		assert.NotContains(t, err.Error(), "s3cret")
	}
	_, err = Load("", env(map[string]string{
		"SECKILL_EVENTS_KAFKA_BROKERS":  "k1:9092",
		"SECKILL_EVENTS_WEBHOOK_URL":    "kafka=https://a.example/x",
		"SECKILL_EVENTS_WEBHOOK_SECRET": eventsKey,
	}))
	var ce *Error
	require.True(t, errors.As(err, &ce), "%v", err)
	assert.Equal(t, "events.webhook_url", ce.Key, "kafka is the Kafka receiver's name")
}

// events.format is seckill or cloudevents; events.source, the CloudEvents
// source, is a URI reference.
func TestEventFormat(t *testing.T) {
	c, err := Load("", env(nil))
	require.NoError(t, err)
	assert.Equal(t, FormatSeckill, c.Events.Format)
	assert.Equal(t, "/seckill", c.Events.Source)
	c, err = Load("", env(map[string]string{"SECKILL_EVENTS_FORMAT": "cloudevents", "SECKILL_EVENTS_SOURCE": "https://shop.example.com/seckill"}))
	require.NoError(t, err)
	assert.Equal(t, FormatCloudEvents, c.Events.Format)
	for key, kv := range map[string]map[string]string{
		"events.format": {"SECKILL_EVENTS_FORMAT": "cloudevent"},
		"events.source": {"SECKILL_EVENTS_SOURCE": "has space"},
	} {
		_, err := Load("", env(kv))
		var ce *Error
		require.True(t, errors.As(err, &ce), "%v: %v", kv, err)
		assert.Equal(t, key, ce.Key)
	}
	_, err = Load("", env(map[string]string{"SECKILL_EVENTS_SOURCE": "%zz"}))
	require.Error(t, err)
}

// FuzzEventTransports: whatever the Kafka brokers, the AMQP URL (with a
// password), the SASL mechanism (with a password) and the CloudEvents
// source hold, Load refuses them naming the key or accepts a configuration
// that validates, and neither password is ever shown.
func FuzzEventTransports(f *testing.F) {
	for _, s := range [][4]string{
		{"k1:9092,k2:9092", "amqp://u:%s@rabbit:5672/vhost", "SCRAM-SHA-512", "/seckill"},
		{"", "amqps://u:%s@[::1]:5671/", "", "https://shop.example.com/seckill"},
		{":9092", "amqp://u:%s@/", "PLAIN", "has space"},
		{"k1", "http://u:%s@h/", "GSSAPI", ""},
		{"[::1]:9092, ,h:1", "amqp://u:%s@h:99999/", "plain", "%zz"},
		{"\x00", "\x00%s", "\x00", "\x00"},
	} {
		f.Add(s[0], s[1], s[2], s[3])
	}
	f.Fuzz(func(t *testing.T, brokers, amqpURL, mechanism, source string) {
		vars := map[string]string{
			"SECKILL_EVENTS_KAFKA_BROKERS":        brokers,
			"SECKILL_EVENTS_AMQP_URL":             strings.ReplaceAll(amqpURL, "%s", dsnSecret),
			"SECKILL_EVENTS_KAFKA_SASL_MECHANISM": mechanism,
			"SECKILL_EVENTS_KAFKA_SASL_USER":      "shop",
			"SECKILL_EVENTS_KAFKA_SASL_PASSWORD":  dsnSecret,
			"SECKILL_EVENTS_SOURCE":               source,
		}
		c, err := Load("", func(k string) string { return vars[k] })
		checkLoaded(t, c, err, "") // which also checks that no password is shown
	})
}
