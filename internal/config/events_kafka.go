package config

import (
	"crypto/tls"
	"crypto/x509"
	"strings"
)

// KafkaName is the receiver name of the Kafka sink.
const KafkaName = "kafka"

// EventsKafka are the Kafka settings of events (events.kafka_*): events
// are produced to Topic, keyed by order id, once Brokers is set.
type EventsKafka struct {
	Brokers string `mapstructure:"kafka_brokers"` // seed brokers, host:port, comma-separated
	Topic   string `mapstructure:"kafka_topic"`
	// TLS speaks TLS to the brokers, trusting the CAs of TLSCAFile (PEM),
	// else the system's roots.
	TLS       bool   `mapstructure:"kafka_tls"`
	TLSCAFile string `mapstructure:"kafka_tls_ca_file"`
	// SASLMechanism is "", PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512, with
	// SASLUser and SASLPassword (a secret: never shown in an error).
	SASLMechanism string `mapstructure:"kafka_sasl_mechanism"`
	SASLUser      string `mapstructure:"kafka_sasl_user"`
	SASLPassword  string `mapstructure:"kafka_sasl_password"`
}

// BrokerList returns the seed brokers.
func (k EventsKafka) BrokerList() []string { return splitList(k.Brokers) }

// TLSConfig returns the TLS configuration for the brokers, nil when TLS is
// off. A CA file that cannot be read or holds no certificate is an *Error
// naming events.kafka_tls_ca_file.
func (k EventsKafka) TLSConfig() (*tls.Config, error) {
	if !k.TLS {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if k.TLSCAFile != "" {
		data, err := readPEM("events.kafka_tls_ca_file", k.TLSCAFile)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(data) {
			return nil, &Error{Key: "events.kafka_tls_ca_file", Value: k.TLSCAFile, Allowed: "a PEM file of CA certificates; this one holds none"}
		}
		c.RootCAs = pool
	}
	return c, nil
}

// validate checks the Kafka settings, and reads the CA file once.
func (k EventsKafka) validate() error {
	for _, b := range k.BrokerList() {
		if err := hostPort("events.kafka_brokers", b); err != nil || strings.HasPrefix(b, ":") {
			return &Error{Key: "events.kafka_brokers", Value: b, Allowed: "host:port of each broker, comma-separated"}
		}
	}
	if len(k.BrokerList()) > 64 {
		return &Error{Key: "events.kafka_brokers", Allowed: "at most 64 seed brokers"}
	}
	t := k.Topic
	if t == "" || t == "." || t == ".." || len(t) > 249 || strings.Trim(t, nameChars) != "" {
		return &Error{Key: "events.kafka_topic", Value: t, Allowed: "a Kafka topic name: 1 to 249 letters, digits, '.', '_' or '-'"}
	}
	if k.TLSCAFile != "" && !k.TLS {
		return &Error{Key: "events.kafka_tls_ca_file", Value: k.TLSCAFile, Allowed: "is set, but events.kafka_tls is not"}
	}
	if _, err := k.TLSConfig(); err != nil {
		return err
	}
	if err := oneOf("events.kafka_sasl_mechanism", k.SASLMechanism, "", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"); err != nil {
		return err
	}
	switch {
	case k.SASLMechanism != "" && k.SASLUser == "":
		return &Error{Key: "events.kafka_sasl_user", Allowed: "needed with events.kafka_sasl_mechanism"}
	case k.SASLMechanism != "" && k.SASLPassword == "":
		return &Error{Key: "events.kafka_sasl_password", Allowed: "needed with events.kafka_sasl_mechanism"}
	case k.SASLMechanism == "" && (k.SASLUser != "" || k.SASLPassword != ""):
		return &Error{Key: "events.kafka_sasl_mechanism", Allowed: "must name the mechanism (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512) when a SASL user or password is set"}
	}
	return nil
}
