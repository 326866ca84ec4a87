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
	"fmt"
	"os"
	"strings"
	"time"

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
	Payment   Payment   `mapstructure:"payment"`
	Events    Events    `mapstructure:"events"`
	Room      Room      `mapstructure:"room"`
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
	// WaitReplicas is how many replicas must acknowledge a buy's write (and
	// the drain's claim of it) before the shopper is answered 202 or the
	// order goes to SQL; 0 answers on the primary's word alone.
	WaitReplicas int           `mapstructure:"wait_replicas"`
	WaitTimeout  time.Duration `mapstructure:"wait_timeout"`
	TLS          RedisTLS      `mapstructure:"tls"`
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

// listenAddr is http.addr or, when it is empty, 127.0.0.1:8080 when fully
// embedded (the quick start, which by default trusts a header for the
// shopper's identity and the shopper for payments: fit for this host only)
// and :8080 otherwise.
func (c *Config) listenAddr() string {
	switch {
	case c.HTTP.Addr != "":
		return c.HTTP.Addr
	case c.External():
		return ":8080"
	}
	return "127.0.0.1:8080"
}

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

// FileError is a configuration file (--config) that cannot be read or
// parsed; its text names the file.
type FileError struct {
	Path string
	err  error
}

func (e *FileError) Error() string { return e.err.Error() }
func (e *FileError) Unwrap() error { return e.err }

// Load reads the defaults, then the file at path when path is not empty, then
// the environment through getenv, and returns the validated Config. Every
// failure is an *Error or wraps one, or a *FileError.
func Load(path string, getenv func(string) string) (*Config, error) {
	v := viper.New()
	v.SetConfigType("yaml")
	if err := v.ReadConfig(bytes.NewReader(configs.Default)); err != nil {
		return nil, fmt.Errorf("config: embedded defaults: %w", err)
	}
	if path != "" {
		f, err := os.ReadFile(path)
		if err != nil {
			return nil, &FileError{Path: path, err: fmt.Errorf("config: read %s: %w", path, err)}
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
	c.HTTP.Addr = c.listenAddr()
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
