package config

// Fuzz targets for Load. Property: whatever the environment or the file
// holds, Load returns a Config that passes Validate or an error (an *Error
// naming the key, or one naming the file), never both, never neither, never
// a panic; and a DSN's password never appears in an error, except where an
// error shows the wrong value of a key that holds no secret.
//
// `go test ./internal/config` runs only the seed corpus; scripts/fuzz.sh
// runs each target for a few seconds, for example:
//
//	go test -run '^$' -fuzz '^FuzzLoadEnv$' -fuzztime 10s ./internal/config

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// dsnSecret is the password of every fuzzed DSN.
const dsnSecret = "Pw-7c1e9b5a"

func checkLoaded(t *testing.T, c *Config, err error, fileRef string) {
	t.Helper()
	if (c == nil) == (err == nil) {
		t.Fatalf("Load returned config %v and error %v: want exactly one", c != nil, err)
	}
	if err != nil {
		var ce *Error
		var fe *FileError
		switch {
		case errors.As(err, &fe):
			if fileRef == "" || fe.Path != fileRef || !strings.Contains(err.Error(), fileRef) {
				t.Fatalf("error %q does not name the file %s", err, fileRef)
			}
		case !errors.As(err, &ce):
			t.Fatalf("error %q names neither a key nor the file: not a configuration error", err)
		}
		// The value of a key that is no secret is shown when it is wrong,
		// whatever it holds.
		shown := err.Error()
		if ce != nil && ce.Key != "mysql.dsn" {
			shown = strings.Replace(shown, strconv.Quote(ce.Value), "", 1)
		}
		if strings.Contains(shown, dsnSecret) {
			t.Fatalf("error %q shows the DSN password", err)
		}
		return
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("Load returned a config that does not validate: %v", err)
	}
}

func FuzzLoadEnv(f *testing.F) {
	type seed struct{ addr, maxBody, timeout, perUser, enabled, proxies, redis, dsnTail string }
	for _, s := range []seed{
		{},
		{":8080", "16384", "10s", "20", "true", "10.0.0.0/8", "127.0.0.1:6379", "tcp(127.0.0.1:3306)/seckill"},
		{"127.0.0.1:0", "256", "1ns", "0", "false", "10.0.0.1, 192.168.0.0/16,,", "a:1,b:2,c:3", "tcp(db:3306)/seckill?parseTime=true"},
		{"[::1]:65535", "16777216", "2562047h", "1000000", "1", "::1/128", "[::1]:6379", "unix(/tmp/mysql.sock)/x"},
		{"nope", "-1", "-5s", "-1", "maybe", "10.0.0.0/33", "redis", "tcp(127.0.0.1:3306)/"},
		{":65536", "16777217", "5", "1000001", "TRUE", "not-an-ip", ":", "tcp(127.0.0.1:3306"},
		{"host with space:80", "1e3", "1.5h", "0x10", "t", "*", "host:-1", "/db?parseTime=maybe"},
		{":80\n", "99999999999999999999", "9999999999h", "2147483648", " ", "0.0.0.0/0", "h:1,", "tcp(h)/db?collation=nope"},
		{"\x00", "\x00", "\x00", "\x00", "\x00", "\x00", "\x00", "\x00"},
	} {
		f.Add(s.addr, s.maxBody, s.timeout, s.perUser, s.enabled, s.proxies, s.redis, s.dsnTail)
	}
	f.Fuzz(func(t *testing.T, addr, maxBody, timeout, perUser, enabled, proxies, redis, dsnTail string) {
		vars := map[string]string{
			"SECKILL_HTTP_ADDR":                  addr,
			"SECKILL_HTTP_MAX_BODY_BYTES":        maxBody,
			"SECKILL_HTTP_READ_TIMEOUT":          timeout,
			"SECKILL_STOCK_LOCK_WAIT":            timeout,
			"SECKILL_RATE_LIMIT_PER_USER":        perUser,
			"SECKILL_RATE_LIMIT_ENABLED":         enabled,
			"SECKILL_RATE_LIMIT_TRUSTED_PROXIES": proxies,
			"SECKILL_REDIS_ADDRS":                redis,
			"SECKILL_MYSQL_DSN":                  "u:" + dsnSecret + "@" + dsnTail,
		}
		c, err := Load("", func(k string) string { return vars[k] })
		checkLoaded(t, c, err, "")
	})
}

func FuzzLoadFile(f *testing.F) {
	for _, s := range []string{
		"",
		"http:\n  addr: \":9090\"\n  cors_origins: [\"https://shop.example\"]\n",
		"rate_limit:\n  enabled: false\n  per_user: 5\n  trusted_proxies:\n    - 10.0.0.0/8\n",
		"stock:\n  strategy: atomic\n  lock_wait: 3s\n",
		"worker:\n  lease: 1s\n",
		"mysql:\n  dsn: \"u:" + dsnSecret + "@tcp(127.0.0.1:3306)\"\n",
		"http: 5\n", "http:\n  nope: 1\n", "http:\n  addr: [1, 2]\n", "http:\n  addr: {a: b}\n",
		"http:\n  read_timeout: 5\n", "http:\n  max_body_bytes: 1.5\n", "redis:\n  addrs: 127.0.0.1:6379\n",
		"redis:\n  db: !!binary aGVsbG8=\n", "a: &a [*a]\n", "a: &x {b: *x}\n",
		"x: &a [1,2]\ny: [*a,*a,*a,*a]\nz: [*y,*y,*y,*y]\n",
		"- 1\n- 2\n", "null\n", "~", "%YAML 1.1\n---\nhttp: {addr: ':1'}\n", "---\n---\n",
		"\t", "{", "http:\n\taddr: x\n", "? [a, b]\n: c\n", "{[1]: 2}\n", "1: 2\n", "http:\n  1: 2\n",
		"\xff\xfe", "http:\n  addr: \"\\uD800\"\n",
		"redis:\n  addrs: [\"h:1\"]\n  tls:\n    enabled: true\n    ca_file: /dev/zero\n",
		"redis:\n  addrs: [\"h:1\"]\n  tls:\n    enabled: true\n    cert_file: /etc/hostname\n    key_file: /etc/hostname\n",
		"redis:\n  tls:\n    insecure_skip_verify: true\n", "redis:\n  tls: true\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "seckill.yaml")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := Load(path, nil)
		checkLoaded(t, c, err, path)
	})
}
