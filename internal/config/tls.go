package config

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
)

// RedisTLS configures TLS to Redis. One setting covers every connection the
// client opens: the standalone server, every node of a Cluster (those it
// learns of later included) and, with Sentinel, the Sentinels as well as
// the primary and replicas they name.
type RedisTLS struct {
	Enabled bool `mapstructure:"enabled"`
	// CAFile is a PEM bundle of the CAs that sign the servers'
	// certificates; empty trusts the system's roots.
	CAFile string `mapstructure:"ca_file"`
	// CertFile and KeyFile are a client certificate and its key, for a
	// server that asks for one (mutual TLS): both or neither.
	CertFile string `mapstructure:"cert_file"`
	KeyFile  string `mapstructure:"key_file"`
	// ServerName is the name sent as SNI and looked for in every server's
	// certificate; empty takes the host of each address dialled.
	ServerName string `mapstructure:"server_name"`
	// InsecureSkipVerify accepts any certificate. Validate refuses it, so
	// no configuration file or variable can turn it on; only a program
	// that builds a Config itself (a test) can.
	InsecureSkipVerify bool `mapstructure:"insecure_skip_verify"`
}

// maxPEMBytes bounds what is read of a certificate or key file.
const maxPEMBytes = 1 << 20

// ClientConfig returns the TLS configuration for the Redis client, nil when
// TLS is off. A file that cannot be read or parsed is an *Error naming its
// key.
func (t RedisTLS) ClientConfig() (*tls.Config, error) {
	if !t.Enabled {
		return nil, nil
	}
	c := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         t.ServerName,
		InsecureSkipVerify: t.InsecureSkipVerify, //nolint:gosec // refused by Validate; set only by a program that builds a Config itself
	}
	if t.CAFile != "" {
		data, err := readPEM("redis.tls.ca_file", t.CAFile)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(data) {
			return nil, &Error{Key: "redis.tls.ca_file", Value: t.CAFile, Allowed: "a PEM file of CA certificates; this one holds none"}
		}
		c.RootCAs = pool
	}
	if t.CertFile != "" || t.KeyFile != "" {
		cert, err := t.clientCertificate()
		if err != nil {
			return nil, err
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

func (t RedisTLS) clientCertificate() (tls.Certificate, error) {
	certPEM, err := readPEM("redis.tls.cert_file", t.CertFile)
	if err != nil {
		return tls.Certificate{}, err
	}
	if !holdsCertificate(certPEM) {
		return tls.Certificate{}, &Error{Key: "redis.tls.cert_file", Value: t.CertFile,
			Allowed: "a PEM file starting with the client certificate; this one holds none"}
	}
	keyPEM, err := readPEM("redis.tls.key_file", t.KeyFile)
	if err != nil {
		return tls.Certificate{}, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		// The certificate parsed: what is wrong is the key, or that it is
		// not the certificate's.
		return tls.Certificate{}, &Error{Key: "redis.tls.key_file", Value: t.KeyFile,
			Allowed: "the PEM private key of redis.tls.cert_file (" + err.Error() + ")"}
	}
	return cert, nil
}

// holdsCertificate reports whether the first certificate block of data
// parses.
func holdsCertificate(data []byte) bool {
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return false
		}
		if b.Type == "CERTIFICATE" {
			_, err := x509.ParseCertificate(b.Bytes)
			return err == nil
		}
	}
}

// readPEM reads the regular file at path, of at most maxPEMBytes. The error
// names key, and not the file's content (a key file is a secret).
func readPEM(key, path string) ([]byte, error) {
	bad := func(why string) error {
		return &Error{Key: key, Value: path, Allowed: "a readable PEM file: " + why}
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, bad(pathErr(err))
	}
	if !st.Mode().IsRegular() {
		return nil, bad("not a regular file")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, bad(pathErr(err))
	}
	defer func() { _ = f.Close() }()
	data, err := io.ReadAll(io.LimitReader(f, maxPEMBytes+1))
	if err != nil {
		return nil, bad(pathErr(err))
	}
	if len(data) > maxPEMBytes {
		return nil, bad("larger than " + strconv.Itoa(maxPEMBytes>>20) + " MiB")
	}
	return data, nil
}

// pathErr is err without the path, which the *Error shows once already.
func pathErr(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// validate checks the TLS settings, and reads the files once so that one
// that cannot be used stops the program at start. embedded is whether no
// Redis address is configured.
func (t RedisTLS) validate(embedded bool) error {
	if t.InsecureSkipVerify {
		return &Error{Key: "redis.tls.insecure_skip_verify", Value: "true",
			Allowed: "must be false: without verifying the server's certificate, anyone on the network path can read " +
				"and change stock and orders; set redis.tls.ca_file to the CA that signed it (and redis.tls.server_name " +
				"when the certificate carries another name)"}
	}
	if !t.Enabled {
		for _, f := range []struct{ key, val string }{
			{"ca_file", t.CAFile}, {"cert_file", t.CertFile}, {"key_file", t.KeyFile}, {"server_name", t.ServerName},
		} {
			if f.val != "" {
				return &Error{Key: "redis.tls.enabled", Value: "false", Allowed: fmt.Sprintf("must be true when redis.tls.%s is set", f.key)}
			}
		}
		return nil
	}
	if embedded {
		return &Error{Key: "redis.tls.enabled", Value: "true", Allowed: "needs redis.addrs: the embedded Redis takes no TLS"}
	}
	switch {
	case t.CertFile != "" && t.KeyFile == "":
		return &Error{Key: "redis.tls.key_file", Allowed: "must be set with redis.tls.cert_file: a client certificate needs its key"}
	case t.KeyFile != "" && t.CertFile == "":
		return &Error{Key: "redis.tls.cert_file", Allowed: "must be set with redis.tls.key_file: a client key needs its certificate"}
	}
	_, err := t.ClientConfig()
	return err
}
