package config

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Validate checks every value and returns the first one not allowed.
func (c *Config) Validate() error {
	checks := []error{
		hostPort("http.addr", c.HTTP.Addr),
		positive("http.read_header_timeout", c.HTTP.ReadHeaderTimeout),
		positive("http.read_timeout", c.HTTP.ReadTimeout),
		positive("http.write_timeout", c.HTTP.WriteTimeout),
		positive("http.idle_timeout", c.HTTP.IdleTimeout),
		positive("http.shutdown_timeout", c.HTTP.ShutdownTimeout),
		between("http.max_body_bytes", c.HTTP.MaxBodyBytes, 256, 16<<20),
		oneOf("http.gin_mode", c.HTTP.GinMode, "release", "debug", "test"),
		redisAddrs(c.Redis.Addrs),
		between("redis.db", int64(c.Redis.DB), 0, 15),
		between("redis.pool_size", int64(c.Redis.PoolSize), 0, 10000),
		positive("redis.dial_timeout", c.Redis.DialTimeout),
		positive("redis.read_timeout", c.Redis.ReadTimeout),
		positive("redis.write_timeout", c.Redis.WriteTimeout),
		keyPrefix(c.Redis.KeyPrefix),
		notNegative("redis.connect_timeout", c.Redis.ConnectTimeout),
		between("redis.wait_replicas", int64(c.Redis.WaitReplicas), 0, 16),
		positive("redis.wait_timeout", c.Redis.WaitTimeout),
		c.Redis.TLS.validate(c.EmbeddedRedis()),
		mysqlDSN(c.MySQL.DSN),
		between("mysql.max_open_conns", int64(c.MySQL.MaxOpenConns), 1, 10000),
		between("mysql.max_idle_conns", int64(c.MySQL.MaxIdleConns), 0, 10000),
		positive("mysql.conn_max_lifetime", c.MySQL.ConnMaxLifetime),
		notNegative("mysql.connect_timeout", c.MySQL.ConnectTimeout),
		adminToken(c.Admin.Token, c.External()),
		oneOf("auth.mode", c.Auth.Mode, "", AuthHeader, AuthJWT),
		c.Auth.validate(),
		oneOf("payment.mode", c.Payment.Mode, append([]string{""}, PaymentModes...)...),
		c.Payment.validate(),
		c.Events.validate(),
		c.Room.validate(),
		oneOf("stock.strategy", c.Stock.Strategy, StrategyLock, StrategyAtomic),
		atLeast("stock.lock_ttl", c.Stock.LockTTL, 10*time.Millisecond),
		positive("stock.lock_wait", c.Stock.LockWait),
		between("stock.batch_max", int64(c.Stock.BatchMax), 1, 1000),
		notNegative("stock.batch_wait", c.Stock.BatchWait),
		atLeast("order.payment_timeout", c.Order.PaymentTimeout, time.Second),
		between("order.max_attempts", int64(c.Order.MaxAttempts), 1, 1000),
		between("worker.batch_size", int64(c.Worker.BatchSize), 1, 5000),
		between("worker.concurrency", int64(c.Worker.Concurrency), 1, 256),
		atLeast("worker.lease", c.Worker.Lease, time.Second),
		positive("worker.sweep_interval", c.Worker.SweepInterval),
		positive("worker.sku_refresh", c.Worker.SKURefresh),
		positive("worker.retry_backoff_max", c.Worker.RetryBackoffMax),
		between("rate_limit.per_user", int64(c.RateLimit.PerUser), 0, 1_000_000),
		between("rate_limit.per_user_burst", int64(c.RateLimit.PerUserBurst), 0, 1_000_000),
		between("rate_limit.per_ip", int64(c.RateLimit.PerIP), 0, 1_000_000),
		between("rate_limit.per_ip_burst", int64(c.RateLimit.PerIPBurst), 0, 1_000_000),
		cidrs("rate_limit.trusted_proxies", c.RateLimit.TrustedProxies),
		oneOf("log.level", c.Log.Level, "debug", "info", "warn", "error"),
		oneOf("log.format", c.Log.Format, "json", "text"),
	}
	for _, err := range checks {
		if err != nil {
			return err
		}
	}
	if c.MySQL.MaxIdleConns > c.MySQL.MaxOpenConns {
		return &Error{Key: "mysql.max_idle_conns", Value: strconv.Itoa(c.MySQL.MaxIdleConns),
			Allowed: "must not exceed mysql.max_open_conns"}
	}
	if c.Stock.LockWait >= c.Stock.LockTTL {
		return &Error{Key: "stock.lock_wait", Value: c.Stock.LockWait.String(),
			Allowed: "must be shorter than stock.lock_ttl"}
	}
	if c.Worker.Lease < 2*c.Worker.SweepInterval {
		return &Error{Key: "worker.lease", Value: c.Worker.Lease.String(),
			Allowed: "must be at least twice worker.sweep_interval"}
	}
	return nil
}

func positive(key string, d time.Duration) error {
	if d <= 0 {
		return &Error{Key: key, Value: d.String(), Allowed: "a duration above zero, e.g. 5s"}
	}
	return nil
}

func notNegative(key string, d time.Duration) error {
	if d < 0 {
		return &Error{Key: key, Value: d.String(), Allowed: "a duration of zero or more"}
	}
	return nil
}

func atLeast(key string, d, least time.Duration) error {
	if d < least {
		return &Error{Key: key, Value: d.String(), Allowed: "a duration of at least " + least.String()}
	}
	return nil
}

func between(key string, n, lo, hi int64) error {
	if n < lo || n > hi {
		return &Error{Key: key, Value: strconv.FormatInt(n, 10),
			Allowed: fmt.Sprintf("an integer from %d to %d", lo, hi)}
	}
	return nil
}

func oneOf(key, val string, allowed ...string) error {
	for _, a := range allowed {
		if val == a {
			return nil
		}
	}
	return &Error{Key: key, Value: val, Allowed: "one of " + strings.Join(allowed, ", ")}
}

func hostPort(key, addr string) error {
	bad := &Error{Key: key, Value: addr, Allowed: "host:port with a port from 0 to 65535, e.g. :8080 or 127.0.0.1:8080"}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || strings.ContainsAny(host, " /") {
		return bad
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return bad
	}
	return nil
}

func redisAddrs(addrs []string) error {
	for _, a := range addrs {
		if err := hostPort("redis.addrs", a); err != nil {
			return err
		}
	}
	return nil
}

func keyPrefix(p string) error {
	if p == "" || len(p) > 64 || strings.ContainsAny(p, "{} \t\r\n") {
		return &Error{Key: "redis.key_prefix", Value: p,
			Allowed: "1 to 64 characters without braces or spaces, e.g. seckill:"}
	}
	return nil
}

func mysqlDSN(dsn string) error {
	if dsn == "" {
		return nil
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		// The DSN may hold a password: do not echo it.
		return &Error{Key: "mysql.dsn", Allowed: "a go-sql-driver DSN such as user:pass@tcp(127.0.0.1:3306)/seckill (" + redact(err.Error(), dsn) + ")"}
	}
	if cfg.DBName == "" {
		return &Error{Key: "mysql.dsn", Allowed: "the DSN must name a database, e.g. root@tcp(127.0.0.1:3306)/seckill"}
	}
	return nil
}

func redact(msg, secret string) string { return strings.ReplaceAll(msg, secret, "<dsn>") }

func adminToken(tok string, external bool) error {
	switch {
	case tok == "":
		return nil
	case external && len(tok) < 32:
		return &Error{Key: "admin.token", Allowed: "empty (admin API off) or at least 32 characters when Redis or MySQL is configured"}
	case len(tok) < 16:
		return &Error{Key: "admin.token", Allowed: "empty (admin API off) or at least 16 characters"}
	}
	return nil
}

// validate checks the JWT keys: in jwt mode exactly one key source; in the
// other modes none (a secret configured but unused is a mistake to report).
func (a Auth) validate() error {
	sources := 0
	for _, s := range []string{a.JWTSecret, a.JWTJWKSURL, a.JWTJWKSFile} {
		if s != "" {
			sources++
		}
	}
	if a.Mode != AuthJWT {
		if sources > 0 {
			return &Error{Key: "auth.mode", Value: a.Mode, Allowed: "must be jwt when a JWT key (auth.jwt_secret, jwt_jwks_url or jwt_jwks_file) is set"}
		}
		return nil
	}
	if sources != 1 {
		return &Error{Key: "auth.jwt_secret", Allowed: "auth.mode jwt needs exactly one of auth.jwt_secret, auth.jwt_jwks_url, auth.jwt_jwks_file"}
	}
	if a.JWTSecret != "" && len(a.JWTSecret) < 32 {
		return &Error{Key: "auth.jwt_secret", Allowed: "at least 32 bytes (HS256 key)"}
	}
	if a.JWTJWKSURL != "" {
		u, err := url.Parse(a.JWTJWKSURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return &Error{Key: "auth.jwt_jwks_url", Value: a.JWTJWKSURL, Allowed: "an http or https URL of a JWK Set"}
		}
	}
	if err := atLeast("auth.jwt_jwks_refresh", a.JWTJWKSRefresh, 10*time.Second); err != nil {
		return err
	}
	if a.JWTLeeway < 0 || a.JWTLeeway > 5*time.Minute {
		return &Error{Key: "auth.jwt_leeway", Value: a.JWTLeeway.String(), Allowed: "a duration from 0s to 5m"}
	}
	if !claimName(a.JWTUserClaim) {
		return &Error{Key: "auth.jwt_user_claim", Value: a.JWTUserClaim, Allowed: "a claim name of 1 to 64 letters, digits, _ - . :"}
	}
	return nil
}

func claimName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-.:", r)) {
			return false
		}
	}
	return true
}

func cidrs(key string, list []string) error {
	for _, s := range list {
		if _, err := netip.ParsePrefix(s); err != nil {
			if _, err := netip.ParseAddr(s); err != nil {
				return &Error{Key: key, Value: s, Allowed: "IP addresses or CIDR prefixes, e.g. 10.0.0.0/8"}
			}
		}
	}
	return nil
}
