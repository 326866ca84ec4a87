// Package config loads seckill's configuration once, at start: the embedded
// defaults (configs/config.yaml), then an optional file, then SECKILL_*
// environment variables, unmarshalled into a typed Config and validated.
//
// Nothing else in the program reads viper; values are passed down from the
// Config this package returns. A bad value is an *Error naming the key and what
// is allowed, which the CLI turns into exit code 2.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"

	"github.com/seckill/seckill/configs"
)

// EnvPrefix starts every environment variable that overrides a key.
const EnvPrefix = "SECKILL"

// Config is the whole configuration. The yaml names are the keys.
type Config struct {
	HTTP      HTTP      `mapstructure:"http"`
	Redis     Redis     `mapstructure:"redis"`
	MySQL     MySQL     `mapstructure:"mysql"`
	Embedded  Embedded  `mapstructure:"embedded"`
	Admin     Admin     `mapstructure:"admin"`
	Auth      Auth      `mapstructure:"auth"`
	Stock     Stock     `mapstructure:"stock"`
	Order     Order     `mapstructure:"order"`
	Worker    Worker    `mapstructure:"worker"`
	RateLimit RateLimit `mapstructure:"rate_limit"`
	Log       Log       `mapstructure:"log"`
}

// HTTP configures the API server.
type HTTP struct {
	Addr              string        `mapstructure:"addr"`
	ReadHeaderTimeout time.Duration `mapstructure:"read_header_timeout"`
	ReadTimeout       time.Duration `mapstructure:"read_timeout"`
	WriteTimeout      time.Duration `mapstructure:"write_timeout"`
	IdleTimeout       time.Duration `mapstructure:"idle_timeout"`
	ShutdownTimeout   time.Duration `mapstructure:"shutdown_timeout"`
	MaxBodyBytes      int64         `mapstructure:"max_body_bytes"`
	CORSOrigins       []string      `mapstructure:"cors_origins"`
	GinMode           string        `mapstructure:"gin_mode"`
}

// Redis configures the Redis client. No address means the embedded server.
type Redis struct {
	Addrs          []string      `mapstructure:"addrs"`
	MasterName     string        `mapstructure:"master_name"`
	Username       string        `mapstructure:"username"`
	Password       string        `mapstructure:"password"`
	DB             int           `mapstructure:"db"`
	PoolSize       int           `mapstructure:"pool_size"`
	DialTimeout    time.Duration `mapstructure:"dial_timeout"`
	ReadTimeout    time.Duration `mapstructure:"read_timeout"`
	WriteTimeout   time.Duration `mapstructure:"write_timeout"`
	KeyPrefix      string        `mapstructure:"key_prefix"`
	ConnectTimeout time.Duration `mapstructure:"connect_timeout"`
}

// MySQL configures the SQL store. No DSN means the embedded SQLite database.
type MySQL struct {
	DSN             string        `mapstructure:"dsn"`
	MaxOpenConns    int           `mapstructure:"max_open_conns"`
	MaxIdleConns    int           `mapstructure:"max_idle_conns"`
	ConnMaxLifetime time.Duration `mapstructure:"conn_max_lifetime"`
	ConnectTimeout  time.Duration `mapstructure:"connect_timeout"`
	MigrateOnStart  bool          `mapstructure:"migrate_on_start"`
}

// Embedded configures the in-process backends used when nothing is configured.
type Embedded struct {
	SQLitePath string `mapstructure:"sqlite_path"`
}

// Admin configures the admin API.
type Admin struct {
	Token string `mapstructure:"token"`
}

// Shopper identification modes (auth.mode).
const (
	AuthHeader = "header" // trust X-User-ID, set by a gateway that authenticated the shopper
	AuthJWT    = "jwt"    // verify Authorization: Bearer <JWT>
)

// Auth configures how shoppers are identified.
type Auth struct {
	Mode           string        `mapstructure:"mode"`
	JWTSecret      string        `mapstructure:"jwt_secret"`
	JWTJWKSURL     string        `mapstructure:"jwt_jwks_url"`
	JWTJWKSFile    string        `mapstructure:"jwt_jwks_file"`
	JWTJWKSRefresh time.Duration `mapstructure:"jwt_jwks_refresh"`
	JWTLeeway      time.Duration `mapstructure:"jwt_leeway"`
	JWTIssuer      string        `mapstructure:"jwt_issuer"`
	JWTAudience    string        `mapstructure:"jwt_audience"`
	JWTUserClaim   string        `mapstructure:"jwt_user_claim"`
}

// ShopperAuth is the mode shoppers are identified by: auth.mode, or header
// when it is unset and the backends are embedded. With a real Redis or MySQL
// and no auth.mode it is an *Error: nobody should trust a spoofable header by
// accident. Only commands that serve shoppers ask.
func (c *Config) ShopperAuth() (string, error) {
	if c.Auth.Mode != "" {
		return c.Auth.Mode, nil
	}
	if c.External() {
		return "", &Error{Key: "auth.mode", Allowed: "must be set when Redis or MySQL is configured: " +
			"header (trust X-User-ID set by a gateway that authenticated the shopper) or jwt (verify Authorization: Bearer <JWT>)"}
	}
	return AuthHeader, nil
}

// Stock strategies.
const (
	StrategyLock   = "lock"
	StrategyAtomic = "atomic"
)

// Stock configures the buy path.
type Stock struct {
	Strategy  string        `mapstructure:"strategy"`
	LockTTL   time.Duration `mapstructure:"lock_ttl"`
	LockWait  time.Duration `mapstructure:"lock_wait"`
	BatchMax  int           `mapstructure:"batch_max"`
	BatchWait time.Duration `mapstructure:"batch_wait"`
}

// Order configures the order lifecycle.
type Order struct {
	PaymentTimeout time.Duration `mapstructure:"payment_timeout"`
	MaxAttempts    int           `mapstructure:"max_attempts"`
}

// Worker configures the drain of the order queues into MySQL.
type Worker struct {
	BatchSize       int           `mapstructure:"batch_size"`
	Concurrency     int           `mapstructure:"concurrency"`
	Lease           time.Duration `mapstructure:"lease"`
	SweepInterval   time.Duration `mapstructure:"sweep_interval"`
	SKURefresh      time.Duration `mapstructure:"sku_refresh"`
	RetryBackoffMax time.Duration `mapstructure:"retry_backoff_max"`
}

// RateLimit configures the per-user and per-IP limits on the buy path.
type RateLimit struct {
	Enabled        bool     `mapstructure:"enabled"`
	PerUser        int      `mapstructure:"per_user"`
	PerUserBurst   int      `mapstructure:"per_user_burst"`
	PerIP          int      `mapstructure:"per_ip"`
	PerIPBurst     int      `mapstructure:"per_ip_burst"`
	TrustedProxies []string `mapstructure:"trusted_proxies"`
}

// Log configures structured logging.
type Log struct {
	Level  string `mapstructure:"level"`
	Format string `mapstructure:"format"`
}

// EmbeddedRedis reports whether no Redis address is configured.
func (c *Config) EmbeddedRedis() bool { return len(c.Redis.Addrs) == 0 }

// EmbeddedSQL reports whether no MySQL DSN is configured.
func (c *Config) EmbeddedSQL() bool { return c.MySQL.DSN == "" }

// External reports whether a real Redis or MySQL is configured: the program
// then runs where others can reach it, and trusts less by default.
func (c *Config) External() bool { return !c.EmbeddedRedis() || !c.EmbeddedSQL() }

// Error is a configuration value that is not allowed.
type Error struct {
	Key     string // e.g. "http.addr"
	Value   string // the offending value, "" when secret or absent
	Allowed string // what the key accepts
}

func (e *Error) Error() string {
	env := envName(e.Key)
	if e.Value != "" {
		return fmt.Sprintf("config: %s (%s) = %q: %s", e.Key, env, e.Value, e.Allowed)
	}
	return fmt.Sprintf("config: %s (%s): %s", e.Key, env, e.Allowed)
}

// Load reads the defaults, then the file at path when path is not empty, then
// the environment through getenv, and returns the validated Config. Every
// failure is an *Error or wraps one, or names the file that could not be read.
func Load(path string, getenv func(string) string) (*Config, error) {
	v := viper.New()
	v.SetConfigType("yaml")
	if err := v.ReadConfig(bytes.NewReader(configs.Default)); err != nil {
		return nil, fmt.Errorf("config: embedded defaults: %w", err)
	}
	if path != "" {
		f, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("config: read %s: %w", path, err)
		}
		if err := mergeFile(v, path, f); err != nil {
			return nil, err
		}
	}
	// Environment variables override every key the defaults define.
	for _, key := range v.AllKeys() {
		if val, ok := lookup(getenv, envName(key)); ok {
			v.Set(key, val)
		}
	}
	var c Config
	err := v.Unmarshal(&c, func(dc *mapstructure.DecoderConfig) {
		dc.ErrorUnused = true
		dc.WeaklyTypedInput = true
		dc.DecodeHook = mapstructure.ComposeDecodeHookFunc(
			durationHook,
			trimmedSliceHook,
		)
	})
	if err != nil {
		return nil, decodeError(err)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// envName is the environment variable that overrides key.
func envName(key string) string {
	return EnvPrefix + "_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// UnknownEnv returns the SECKILL_* variables in environ ("NAME=value"
// entries, as os.Environ gives them) that override no key. Such a variable is
// most often a typo, which would otherwise be ignored without a word.
func UnknownEnv(environ []string) []string {
	v := viper.New()
	v.SetConfigType("yaml")
	if err := v.ReadConfig(bytes.NewReader(configs.Default)); err != nil {
		return nil // Load reports it
	}
	known := map[string]bool{}
	for _, k := range v.AllKeys() {
		known[envName(k)] = true
	}
	var unknown []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, EnvPrefix+"_") && !known[name] {
			unknown = append(unknown, name)
		}
	}
	return unknown
}

func lookup(getenv func(string) string, name string) (string, bool) {
	if getenv == nil {
		return "", false
	}
	val := getenv(name)
	return val, val != ""
}

// mergeFile merges a YAML file over the defaults, refusing keys that the
// defaults do not know (a typo would otherwise be ignored silently).
func mergeFile(v *viper.Viper, path string, data []byte) error {
	file := viper.New()
	file.SetConfigType("yaml")
	if err := file.ReadConfig(bytes.NewReader(data)); err != nil {
		return fmt.Errorf("config: parse %s: %w", path, err)
	}
	known := map[string]bool{}
	for _, k := range v.AllKeys() {
		known[k] = true
	}
	for _, k := range file.AllKeys() {
		if !known[k] {
			return &Error{Key: k, Allowed: "unknown key in " + path}
		}
	}
	return v.MergeConfigMap(file.AllSettings())
}

// trimmedSliceHook turns "a, b,,c" into ["a","b","c"], the form lists take in
// the environment.
func trimmedSliceHook(from, to reflect.Type, data any) (any, error) {
	if from.Kind() != reflect.String || to.Kind() != reflect.Slice {
		return data, nil
	}
	var out []string
	for _, s := range strings.Split(data.(string), ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out, nil
}

// decodeError turns a failed Unmarshal into an *Error naming the first key
// whose value did not decode (mapstructure joins one *DecodeError per key, in
// field order) and what that key accepts.
func decodeError(err error) error {
	var de *mapstructure.DecodeError
	if !errors.As(err, &de) || de.Name() == "" {
		// No key to blame: the decoder was misused, not misconfigured.
		return fmt.Errorf("config: %w", err)
	}
	ce := &Error{Key: fieldKey(de.Name()), Allowed: de.Unwrap().Error()}
	var ve *valueError
	var pe *mapstructure.ParseError
	switch {
	case errors.As(de, &ve):
		ce.Value, ce.Allowed = ve.value, ve.allowed
	case errors.As(de, &pe):
		// Only numbers and booleans fail to parse, never a secret: the value
		// can be shown.
		if s, ok := pe.Value.(string); ok {
			ce.Value = s
		}
		ce.Allowed = parseAllowed(pe)
	}
	return ce
}

// fieldKey is the configuration key of a mapstructure field name: an element
// of a list ("redis.addrs[1]") is set through the list's key.
func fieldKey(name string) string {
	if i := strings.IndexByte(name, '['); i > 0 {
		return name[:i]
	}
	return name
}

// parseAllowed says what a key whose value did not parse accepts.
func parseAllowed(pe *mapstructure.ParseError) string {
	var ne *strconv.NumError
	outOfRange := errors.As(pe.Err, &ne) && errors.Is(ne.Err, strconv.ErrRange)
	switch pe.Expected.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if outOfRange {
			return "an integer, and this one is out of range"
		}
		return "an integer, e.g. 100"
	case reflect.Float32, reflect.Float64:
		if outOfRange {
			return "a number, and this one is out of range"
		}
		return "a number, e.g. 0.5"
	}
	return pe.Error()
}

// valueError is a value a decode hook could not convert; decodeError adds
// the key.
type valueError struct {
	value   string
	allowed string
	err     error
}

func (e *valueError) Error() string { return e.allowed + ": " + e.err.Error() }
func (e *valueError) Unwrap() error { return e.err }

var durationType = reflect.TypeFor[time.Duration]()

// durationHook parses strings such as "5s" into time.Duration; one that does
// not parse is a *valueError.
func durationHook(from, to reflect.Type, data any) (any, error) {
	if from.Kind() != reflect.String || to != durationType {
		return data, nil
	}
	s := data.(string)
	d, err := time.ParseDuration(s)
	if err != nil {
		return nil, &valueError{value: s, allowed: "a duration such as 300ms, 5s or 1h30m (at most 2562047h)", err: err}
	}
	return d, nil
}

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
		mysqlDSN(c.MySQL.DSN),
		between("mysql.max_open_conns", int64(c.MySQL.MaxOpenConns), 1, 10000),
		between("mysql.max_idle_conns", int64(c.MySQL.MaxIdleConns), 0, 10000),
		positive("mysql.conn_max_lifetime", c.MySQL.ConnMaxLifetime),
		notNegative("mysql.connect_timeout", c.MySQL.ConnectTimeout),
		adminToken(c.Admin.Token, c.External()),
		oneOf("auth.mode", c.Auth.Mode, "", AuthHeader, AuthJWT),
		c.Auth.validate(),
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
