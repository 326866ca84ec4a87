package config

import (
	"net/url"
	"strings"
	"time"
)

// Events configures the order events seckill sends the shop (internal/outbox):
// off unless a webhook URL, a NATS URL, an AMQP URL or Kafka brokers are set.
type Events struct {
	// WebhookURL is one or more receivers, comma-separated, each a URL
	// or name=URL; each gets every event, signed with WebhookSecret
	// (Standard Webhooks). Webhooks says how each is named.
	WebhookURL    string `mapstructure:"webhook_url"`
	WebhookSecret string `mapstructure:"webhook_secret"`
	// NATSURL is a NATS server with JetStream; events are published on
	// NATSSubject.<type>, with the event id as the message id.
	NATSURL     string `mapstructure:"nats_url"`
	NATSSubject string `mapstructure:"nats_subject"`
	// NATSDuplicateWindow is the duplicate window of the stream seckill
	// makes: a retry published within it of an earlier copy is stored once.
	NATSDuplicateWindow time.Duration `mapstructure:"nats_duplicate_window"`
	// AMQPURL is a RabbitMQ broker (amqp:// or amqps://, with its user,
	// password and vhost); events are published to AMQPExchange, a durable
	// topic exchange, with the event type as routing key.
	AMQPURL      string      `mapstructure:"amqp_url"`
	AMQPExchange string      `mapstructure:"amqp_exchange"`
	Kafka        EventsKafka `mapstructure:",squash"`
	// Format is seckill (seckill's own envelope) or cloudevents
	// (CloudEvents 1.0, whose source attribute is Source).
	Format      string        `mapstructure:"format"`
	Source      string        `mapstructure:"source"`
	Timeout     time.Duration `mapstructure:"timeout"`     // one delivery to one sink
	MaxAge      time.Duration `mapstructure:"max_age"`     // retried this long, then dead
	BackoffMin  time.Duration `mapstructure:"backoff_min"` // first retry's delay
	BackoffMax  time.Duration `mapstructure:"backoff_max"` // cap on a retry's delay
	Retention   time.Duration `mapstructure:"retention"`   // delivered events are deleted after this
	Concurrency int           `mapstructure:"concurrency"` // deliveries in flight per receiver and process
}

// Webhook is a receiver of events.webhook_url.
type Webhook struct {
	// Name identifies the receiver in the outbox, the metrics and the
	// admin API: what its entry names it (name=URL), or its URL's host and
	// path (shop.example.com/hooks). Its delivery state is kept under it,
	// so a receiver keeps its backlog across a change of URL only when it
	// is named.
	Name string
	URL  string
}

// NATSName is the receiver name of the NATS sink.
const NATSName = "nats"

// AMQPName is the receiver name of the AMQP sink.
const AMQPName = "amqp"

// Formats of events.format.
const (
	FormatSeckill     = "seckill"
	FormatCloudEvents = "cloudevents"
)

// Receiver names: a given name is a letter or digit, then up to 63
// letters, digits, '.', '_' or '-'; a name made of a URL is at most
// maxNameLen bytes.
const (
	nameChars  = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"
	maxNameLen = 128
)

// Webhooks returns the receivers, one per comma-separated entry, each with
// its name.
func (e Events) Webhooks() []Webhook {
	var out []Webhook
	for _, entry := range splitList(e.WebhookURL) {
		w, _ := webhookOf(entry)
		out = append(out, w)
	}
	return out
}

// webhookOf reads an entry of events.webhook_url: name=URL (named), or a
// URL, named after its host and path.
func webhookOf(entry string) (w Webhook, named bool) {
	if name, u, ok := strings.Cut(entry, "="); ok && !strings.ContainsAny(name, ":/") {
		return Webhook{Name: strings.TrimSpace(name), URL: strings.TrimSpace(u)}, true
	}
	w = Webhook{URL: entry}
	if p, err := url.Parse(entry); err == nil {
		w.Name = p.Host + strings.TrimSuffix(p.EscapedPath(), "/")
	}
	return w, false
}

// validName reports whether name is a name an entry may give.
func validName(name string) bool {
	return name != "" && len(name) <= 64 && strings.Trim(name, nameChars) == "" &&
		strings.IndexByte("._-", name[0]) < 0
}

// plainName reports whether a name made of a URL can name a receiver: 1 to
// maxNameLen printable ASCII characters, no space.
func plainName(name string) bool {
	if name == "" || len(name) > maxNameLen {
		return false
	}
	for i := range len(name) {
		if name[i] <= ' ' || name[i] > '~' {
			return false
		}
	}
	return true
}

// On reports whether events are written and sent.
func (e Events) On() bool {
	return len(e.WebhookURLs()) > 0 || e.NATSURL != "" || e.AMQPURL != "" || len(e.Kafka.BrokerList()) > 0
}

// WebhookURLs returns the receivers' URLs, one per comma-separated entry.
func (e Events) WebhookURLs() []string {
	var out []string
	for _, w := range e.Webhooks() {
		out = append(out, w.URL)
	}
	return out
}

// Secrets returns the signing keys: the first signs; more are for a
// receiver that accepts any of them during a rotation.
func (e Events) Secrets() []string { return splitList(e.WebhookSecret) }

func (e Events) validate() error {
	urls := e.WebhookURLs()
	if len(urls) > 16 {
		return &Error{Key: "events.webhook_url", Allowed: "at most 16 receivers"}
	}
	names := map[string]bool{}
	if e.NATSURL != "" {
		names[NATSName] = true
	}
	if e.AMQPURL != "" {
		names[AMQPName] = true
	}
	if len(e.Kafka.BrokerList()) > 0 {
		names[KafkaName] = true
	}
	for _, entry := range splitList(e.WebhookURL) {
		w, named := webhookOf(entry)
		p, err := url.Parse(w.URL)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return &Error{Key: "events.webhook_url", Value: w.URL, Allowed: "http:// or https:// URLs, each optionally name=URL, comma-separated"}
		}
		switch {
		case named && !validName(w.Name):
			return &Error{Key: "events.webhook_url", Value: w.Name, Allowed: "a receiver name (name=URL) of 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit"}
		case !plainName(w.Name):
			return &Error{Key: "events.webhook_url", Value: w.URL, Allowed: "a URL whose host and path are at most 128 printable ASCII characters, or one given a name (name=URL)"}
		case names[w.Name]:
			return &Error{Key: "events.webhook_url", Value: w.Name, Allowed: "one receiver per name: give each a name of its own (name=URL)"}
		}
		names[w.Name] = true
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
		e.validateAMQP(),
		e.Kafka.validate(),
		oneOf("events.format", e.Format, FormatSeckill, FormatCloudEvents),
		ceSource(e.Source),
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
	// A retry comes at most backoff_max after the attempt before it, which
	// may have been stored with its acknowledgement lost; and a dispatcher
	// that died mid-send leaves it to another once its lease (timeout plus
	// 10s) ends.
	least := e.BackoffMax + 2*e.Timeout + 10*time.Second
	if e.NATSURL != "" && (e.NATSDuplicateWindow < least || e.NATSDuplicateWindow > 7*24*time.Hour) {
		return &Error{Key: "events.nats_duplicate_window", Value: e.NATSDuplicateWindow.String(),
			Allowed: "at least events.backoff_max + 2 x events.timeout + 10s (" + least.String() + "), at most 168h"}
	}
	return nil
}

// ceSource checks events.source, a CloudEvents source: a URI reference of
// up to 255 printable ASCII characters.
func ceSource(s string) error {
	_, err := url.Parse(s)
	if err != nil || !plainName(s) || len(s) > 255 {
		return &Error{Key: "events.source", Value: s,
			Allowed: "a URI reference of 1 to 255 printable ASCII characters, no space, naming this deployment (https://shop.example.com/seckill, /seckill/eu-1)"}
	}
	return nil
}

// validateAMQP checks events.amqp_url, whose value is not repeated in an
// error (it holds a password), and events.amqp_exchange.
func (e Events) validateAMQP() error {
	if e.AMQPURL != "" {
		p, err := url.Parse(e.AMQPURL)
		if err != nil || (p.Scheme != "amqp" && p.Scheme != "amqps") || p.Host == "" {
			return &Error{Key: "events.amqp_url", Allowed: "an amqp:// or amqps:// URL with the user, its password, the host, port 5672 and the vhost"}
		}
	}
	x := e.AMQPExchange
	if x == "" || len(x) > 127 || strings.Trim(x, nameChars+":") != "" || strings.HasPrefix(x, "amq.") {
		return &Error{Key: "events.amqp_exchange", Value: x,
			Allowed: "1 to 127 letters, digits, '.', '_', '-' or ':', not starting with amq. (RabbitMQ's own)"}
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
