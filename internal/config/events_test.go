package config

import (
	"errors"
	"strings"
	"testing"

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
