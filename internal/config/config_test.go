package config

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func env(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

func TestDefaultsAreValidAndEmbedded(t *testing.T) {
	c, err := Load("", env(nil))
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:8080", c.HTTP.Addr, "the quick start listens on this host only")
	assert.True(t, c.EmbeddedRedis())
	assert.True(t, c.EmbeddedSQL())
	assert.Equal(t, StrategyLock, c.Stock.Strategy)
	assert.Equal(t, 15*time.Minute, c.Order.PaymentTimeout)
	assert.True(t, c.RateLimit.Enabled)
}

// The quick start's server (fully embedded: shoppers identified by a
// header, payments trusted) listens on this host only unless http.addr says
// otherwise; with a real Redis or MySQL the default is every interface.
func TestEmbeddedListensOnThisHostUnlessTold(t *testing.T) {
	for name, tc := range map[string]struct {
		env  map[string]string
		file string
		want string
	}{
		"embedded":                  {want: "127.0.0.1:8080"},
		"a real redis":              {env: map[string]string{"SECKILL_REDIS_ADDRS": "127.0.0.1:6379"}, want: ":8080"},
		"a real mysql":              {env: map[string]string{"SECKILL_MYSQL_DSN": "root@tcp(127.0.0.1:3306)/seckill"}, want: ":8080"},
		"embedded, told by env":     {env: map[string]string{"SECKILL_HTTP_ADDR": ":9000"}, want: ":9000"},
		"embedded, told by file":    {file: "http:\n  addr: \":8080\"\n", want: ":8080"},
		"real redis, told by env":   {env: map[string]string{"SECKILL_REDIS_ADDRS": "h:6379", "SECKILL_HTTP_ADDR": "10.0.0.1:80"}, want: "10.0.0.1:80"},
		"embedded, told a loopback": {env: map[string]string{"SECKILL_HTTP_ADDR": "127.0.0.1:9000"}, want: "127.0.0.1:9000"},
	} {
		path := ""
		if tc.file != "" {
			path = filepath.Join(t.TempDir(), "seckill.yaml")
			require.NoError(t, os.WriteFile(path, []byte(tc.file), 0o600))
		}
		c, err := Load(path, env(tc.env))
		require.NoError(t, err, name)
		assert.Equal(t, tc.want, c.HTTP.Addr, name)
	}
}

func TestEnvironmentOverrides(t *testing.T) {
	c, err := Load("", env(map[string]string{
		"SECKILL_REDIS_ADDRS":        "127.0.0.1:7000, 127.0.0.1:7001,127.0.0.1:7002",
		"SECKILL_MYSQL_DSN":          "root:@tcp(127.0.0.1:3306)/seckill?parseTime=true",
		"SECKILL_HTTP_ADDR":          "127.0.0.1:9090",
		"SECKILL_ADMIN_TOKEN":        "0123456789abcdef0123456789abcdef",
		"SECKILL_RATE_LIMIT_ENABLED": "false",
		"SECKILL_STOCK_LOCK_WAIT":    "20ms",
		"SECKILL_WORKER_BATCH_SIZE":  "1000",
	}))
	require.NoError(t, err)
	assert.Equal(t, []string{"127.0.0.1:7000", "127.0.0.1:7001", "127.0.0.1:7002"}, c.Redis.Addrs)
	assert.False(t, c.EmbeddedRedis())
	assert.False(t, c.EmbeddedSQL())
	assert.Equal(t, "127.0.0.1:9090", c.HTTP.Addr)
	assert.Equal(t, "0123456789abcdef0123456789abcdef", c.Admin.Token)
	assert.False(t, c.RateLimit.Enabled)
	assert.Equal(t, 20*time.Millisecond, c.Stock.LockWait)
	assert.Equal(t, 1000, c.Worker.BatchSize)
}

func TestFileThenEnvironment(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	require.NoError(t, os.WriteFile(path, []byte("http:\n  addr: \":9000\"\nstock:\n  strategy: atomic\n"), 0o600))
	c, err := Load(path, env(map[string]string{"SECKILL_HTTP_ADDR": ":9001"}))
	require.NoError(t, err)
	assert.Equal(t, ":9001", c.HTTP.Addr, "environment wins over the file")
	assert.Equal(t, StrategyAtomic, c.Stock.Strategy, "file wins over the defaults")
}

func TestBadValuesNameTheKey(t *testing.T) {
	for _, tc := range []struct {
		env map[string]string
		key string
	}{
		{map[string]string{"SECKILL_HTTP_ADDR": "nonsense"}, "http.addr"},
		{map[string]string{"SECKILL_HTTP_ADDR": ":99999"}, "http.addr"},
		{map[string]string{"SECKILL_REDIS_ADDRS": "localhost"}, "redis.addrs"},
		{map[string]string{"SECKILL_MYSQL_DSN": "not a dsn"}, "mysql.dsn"},
		{map[string]string{"SECKILL_MYSQL_DSN": "root@tcp(127.0.0.1:3306)/"}, "mysql.dsn"},
		{map[string]string{"SECKILL_ADMIN_TOKEN": "short"}, "admin.token"},
		{map[string]string{"SECKILL_STOCK_STRATEGY": "optimistic"}, "stock.strategy"},
		{map[string]string{"SECKILL_HTTP_READ_TIMEOUT": "soon"}, "http.read_timeout"},
		{map[string]string{"SECKILL_HTTP_READ_TIMEOUT": "-1s"}, "http.read_timeout"},
		{map[string]string{"SECKILL_WORKER_BATCH_SIZE": "0"}, "worker.batch_size"},
		{map[string]string{"SECKILL_WORKER_BATCH_SIZE": "many"}, "worker.batch_size"},
		{map[string]string{"SECKILL_WORKER_BATCH_SIZE": "99999999999999999999"}, "worker.batch_size"},
		{map[string]string{"SECKILL_ROOM_STREAMS": "0"}, "room.streams"},
		{map[string]string{"SECKILL_ROOM_STREAMS": "2000000"}, "room.streams"},
		{map[string]string{"SECKILL_HTTP_MAX_BODY_BYTES": "1e3"}, "http.max_body_bytes"},
		{map[string]string{"SECKILL_HTTP_READ_TIMEOUT": "9999999999h"}, "http.read_timeout"},
		{map[string]string{"SECKILL_HTTP_READ_TIMEOUT": "5"}, "http.read_timeout"},
		// Several bad values: the first key, in the order of Config, is named.
		{map[string]string{"SECKILL_WORKER_BATCH_SIZE": "many", "SECKILL_HTTP_READ_TIMEOUT": "soon"}, "http.read_timeout"},
		{map[string]string{"SECKILL_RATE_LIMIT_ENABLED": "maybe"}, "rate_limit.enabled"},
		{map[string]string{"SECKILL_RATE_LIMIT_TRUSTED_PROXIES": "10.0.0.0/99"}, "rate_limit.trusted_proxies"},
		{map[string]string{"SECKILL_LOG_LEVEL": "loud"}, "log.level"},
		{map[string]string{"SECKILL_REDIS_KEY_PREFIX": "{x}"}, "redis.key_prefix"},
		{map[string]string{"SECKILL_REDIS_ADDRS": "127.0.0.1:6379", "SECKILL_ADMIN_TOKEN": "sixteen-chars-0123"}, "admin.token"},
		{map[string]string{"SECKILL_AUTH_MODE": "trust"}, "auth.mode"},
		{map[string]string{"SECKILL_AUTH_JWT_SECRET": jwtSecret}, "auth.mode"},
		{map[string]string{"SECKILL_AUTH_MODE": "jwt"}, "auth.jwt_secret"},
		{map[string]string{"SECKILL_AUTH_MODE": "jwt", "SECKILL_AUTH_JWT_SECRET": "short"}, "auth.jwt_secret"},
		{map[string]string{"SECKILL_AUTH_MODE": "jwt", "SECKILL_AUTH_JWT_SECRET": jwtSecret, "SECKILL_AUTH_JWT_JWKS_FILE": "/k.json"}, "auth.jwt_secret"},
		{map[string]string{"SECKILL_AUTH_MODE": "jwt", "SECKILL_AUTH_JWT_JWKS_URL": "ftp://id.test/jwks"}, "auth.jwt_jwks_url"},
		{map[string]string{"SECKILL_AUTH_MODE": "jwt", "SECKILL_AUTH_JWT_JWKS_URL": "https:///jwks"}, "auth.jwt_jwks_url"},
		{map[string]string{"SECKILL_AUTH_MODE": "jwt", "SECKILL_AUTH_JWT_SECRET": jwtSecret, "SECKILL_AUTH_JWT_LEEWAY": "10m"}, "auth.jwt_leeway"},
		{map[string]string{"SECKILL_AUTH_MODE": "jwt", "SECKILL_AUTH_JWT_SECRET": jwtSecret, "SECKILL_AUTH_JWT_LEEWAY": "-1s"}, "auth.jwt_leeway"},
		{map[string]string{"SECKILL_AUTH_MODE": "jwt", "SECKILL_AUTH_JWT_SECRET": jwtSecret, "SECKILL_AUTH_JWT_JWKS_REFRESH": "1s"}, "auth.jwt_jwks_refresh"},
		{map[string]string{"SECKILL_AUTH_MODE": "jwt", "SECKILL_AUTH_JWT_SECRET": jwtSecret, "SECKILL_AUTH_JWT_USER_CLAIM": "a b"}, "auth.jwt_user_claim"},
	} {
		_, err := Load("", env(tc.env))
		var ce *Error
		require.Error(t, err, "%v", tc.env)
		require.True(t, errors.As(err, &ce), "%v: %v is not a *config.Error", tc.env, err)
		assert.Equal(t, tc.key, ce.Key, "%v: %v", tc.env, err)
		assert.Contains(t, err.Error(), tc.key+" ("+envName(tc.key)+")")
	}
}

// TestUndecodableValuesShowValueAndWhatIsAllowed: a value that does not
// parse as its key's type is shown, with what the key accepts.
func TestUndecodableValuesShowValueAndWhatIsAllowed(t *testing.T) {
	for _, tc := range []struct {
		name, value, allowed string
	}{
		{"SECKILL_HTTP_READ_TIMEOUT", "soon", "a duration"},
		{"SECKILL_WORKER_BATCH_SIZE", "many", "an integer"},
		{"SECKILL_WORKER_BATCH_SIZE", "99999999999999999999", "out of range"},
		{"SECKILL_RATE_LIMIT_ENABLED", "maybe", "true or false"},
	} {
		_, err := Load("", env(map[string]string{tc.name: tc.value}))
		var ce *Error
		require.ErrorAs(t, err, &ce, "%s=%s", tc.name, tc.value)
		assert.Equal(t, tc.value, ce.Value, "%s=%s: %v", tc.name, tc.value, err)
		assert.Contains(t, ce.Allowed, tc.allowed, "%s=%s: %v", tc.name, tc.value, err)
	}
}

// TestBadFileValuesNameTheKey: a value of the wrong shape in the file names
// its key, a list's key for one of its elements.
func TestBadFileValuesNameTheKey(t *testing.T) {
	for _, tc := range []struct{ yaml, key string }{
		{"http:\n  addr: [1, 2]\n", "http.addr"},
		{"http:\n  read_timeout: [1]\n", "http.read_timeout"},
		{"http:\n  read_timeout: soon\n", "http.read_timeout"},
		{"rate_limit:\n  enabled: [x]\n", "rate_limit.enabled"},
		{"redis:\n  db: !!binary aGVsbG8=\n", "redis.db"},
		{"redis:\n  addrs: [[1], {a: b}]\n", "redis.addrs"},
		{"http:\n  cors_origins: [\"https://shop.test\", [1]]\n", "http.cors_origins"},
	} {
		path := filepath.Join(t.TempDir(), "c.yaml")
		require.NoError(t, os.WriteFile(path, []byte(tc.yaml), 0o600))
		_, err := Load(path, env(nil))
		var ce *Error
		require.ErrorAs(t, err, &ce, "%q", tc.yaml)
		assert.Equal(t, tc.key, ce.Key, "%q: %v", tc.yaml, err)
		assert.Contains(t, err.Error(), tc.key+" ("+envName(tc.key)+")")
	}
}

const jwtSecret = "config-test-jwt-secret-0123456789abcdef"

func TestShopperAuth(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string // "" = an error naming auth.mode
	}{
		{nil, AuthHeader},
		{map[string]string{"SECKILL_AUTH_MODE": "jwt", "SECKILL_AUTH_JWT_SECRET": jwtSecret}, AuthJWT},
		{map[string]string{"SECKILL_REDIS_ADDRS": "127.0.0.1:6379"}, ""},
		{map[string]string{"SECKILL_MYSQL_DSN": "root@tcp(127.0.0.1:3306)/seckill"}, ""},
		{map[string]string{"SECKILL_REDIS_ADDRS": "127.0.0.1:6379", "SECKILL_AUTH_MODE": "header"}, AuthHeader},
		{map[string]string{"SECKILL_MYSQL_DSN": "root@tcp(127.0.0.1:3306)/seckill", "SECKILL_AUTH_MODE": "jwt",
			"SECKILL_AUTH_JWT_JWKS_URL": "https://id.shop.test/.well-known/jwks.json"}, AuthJWT},
	} {
		c, err := Load("", env(tc.env))
		require.NoError(t, err, "%v", tc.env)
		mode, err := c.ShopperAuth()
		if tc.want == "" {
			var ce *Error
			require.ErrorAs(t, err, &ce, "%v", tc.env)
			assert.Equal(t, "auth.mode", ce.Key)
			continue
		}
		require.NoError(t, err, "%v", tc.env)
		assert.Equal(t, tc.want, mode, "%v", tc.env)
	}
}

func TestUnknownEnv(t *testing.T) {
	assert.Equal(t, []string{"SECKILL_RATE_LIMIT_ENABLE", "SECKILL_AUTH_USER_TOKEN_SECRET"}, UnknownEnv([]string{
		"PATH=/bin", "SECKILL_RATE_LIMIT_ENABLED=false", "SECKILL_RATE_LIMIT_ENABLE=false",
		"SECKILL_AUTH_USER_TOKEN_SECRET=x", "SECKILL=1", "SECKILLX_Y=1", "SECKILL_HTTP_ADDR=:1",
	}))
	assert.Empty(t, UnknownEnv(nil))
}

func TestDSNErrorDoesNotEchoPassword(t *testing.T) {
	_, err := Load("", env(map[string]string{"SECKILL_MYSQL_DSN": "root:hunter2@tcp(x:1)"}))
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "hunter2")
}

// A file the YAML library cannot read is reported with the file, the line
// and the problem, but nothing the library quotes of it: a secret file passed
// as the config would otherwise reach the log.
func TestUnreadableFileQuotesNothingOfIt(t *testing.T) {
	for data, want := range map[string]string{
		"hunter2-secret":                          "line 1: cannot unmarshal !!str … into map",
		"!hunter2-secret 1":                       "line 1: cannot unmarshal … … into map",
		"a: *hunter2-secret\n":                    "unknown anchor … referenced",
		"http:\n  ? {hunter2-secret: 1}\n  : c\n": "invalid map key",
		"http: !!int hunter2-secret\n":            "cannot decode !!str … as a !!int",
		"hunter2-secret: [\n":                     "line 1: did not find expected node content",
	} {
		path := filepath.Join(t.TempDir(), "c.yaml")
		require.NoError(t, os.WriteFile(path, []byte(data), 0o600))
		_, err := Load(path, env(nil))
		require.Error(t, err, data)
		assert.Contains(t, err.Error(), path, data)
		assert.Contains(t, err.Error(), want, data)
		assert.NotContains(t, err.Error(), "hunter2", data)
	}
}

func TestUnknownFileKeyIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	require.NoError(t, os.WriteFile(path, []byte("http:\n  adr: \":9000\"\n"), 0o600))
	_, err := Load(path, env(nil))
	var ce *Error
	require.True(t, errors.As(err, &ce), "%v", err)
	assert.Equal(t, "http.adr", ce.Key)
}

func TestMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"), env(nil))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nope.yaml")
}
