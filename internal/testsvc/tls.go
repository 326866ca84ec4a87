package testsvc

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/config"
)

// The variables that name the Redis deployments that speak TLS only, and
// the files a client presents and trusts there. The CA signed the servers'
// certificates (for 127.0.0.1 and localhost) and the client certificate,
// which every TLS server but the standalone one requires.
const (
	EnvRedisTLS               = "SECKILL_TEST_REDIS_TLS_ADDR"
	EnvRedisTLSCluster        = "SECKILL_TEST_REDIS_TLS_CLUSTER_ADDRS"
	EnvRedisTLSSentinel       = "SECKILL_TEST_REDIS_TLS_SENTINEL_ADDRS"
	EnvRedisTLSSentinelMaster = "SECKILL_TEST_REDIS_TLS_SENTINEL_MASTER"
	EnvRedisTLSCA             = "SECKILL_TEST_REDIS_TLS_CA_FILE"
	EnvRedisTLSCert           = "SECKILL_TEST_REDIS_TLS_CERT_FILE"
	EnvRedisTLSKey            = "SECKILL_TEST_REDIS_TLS_KEY_FILE"
)

// The TLS deployments.
const (
	TLSStandalone = "standalone"
	TLSCluster    = "cluster" // 3 masters
	TLSSentinel   = "sentinel"
)

// TLSDeployments are the names of the TLS deployments, for subtests.
var TLSDeployments = []string{TLSStandalone, TLSCluster, TLSSentinel}

// TLSTarget is what configures seckill for one TLS deployment.
type TLSTarget struct {
	Addrs      []string // the server, the Cluster's masters, or the Sentinels
	MasterName string   // the Sentinels' master name; "" otherwise
	// TLS is enabled, trusts the test CA and presents the client
	// certificate.
	TLS config.RedisTLS
}

// RedisTLSTarget returns the addresses of the TLS deployment named kind and
// the TLS settings that reach it.
func RedisTLSTarget(t testing.TB, kind string) TLSTarget {
	t.Helper()
	target := TLSTarget{TLS: config.RedisTLS{
		Enabled:  true,
		CAFile:   Env(t, EnvRedisTLSCA),
		CertFile: Env(t, EnvRedisTLSCert),
		KeyFile:  Env(t, EnvRedisTLSKey),
	}}
	switch kind {
	case TLSStandalone:
		target.Addrs = []string{Env(t, EnvRedisTLS)}
	case TLSCluster:
		target.Addrs = splitAddrs(Env(t, EnvRedisTLSCluster))
	case TLSSentinel:
		target.Addrs = splitAddrs(Env(t, EnvRedisTLSSentinel))
		target.MasterName = Env(t, EnvRedisTLSSentinelMaster)
	default:
		t.Fatalf("testsvc: no TLS deployment %q", kind)
	}
	return target
}

// options are go-redis options for the target.
func (tt TLSTarget) options() (*redis.UniversalOptions, error) {
	c, err := tt.TLS.ClientConfig()
	if err != nil {
		return nil, err
	}
	return &redis.UniversalOptions{
		Addrs:       tt.Addrs,
		MasterName:  tt.MasterName,
		TLSConfig:   c,
		DialTimeout: 2 * time.Second,
		// Only the Cluster needs several seed addresses to be one.
		IsClusterMode: len(tt.Addrs) > 1 && tt.MasterName == "",
	}, nil
}

// RedisTLS returns a client for the TLS deployment named kind and a key
// prefix unique to the test; keys under the prefix are deleted (from every
// master of the Cluster, from the Sentinels' primary) when the test ends.
// An unreachable deployment skips the test, or fails it with CI=true.
func RedisTLS(t testing.TB, kind string) (redis.UniversalClient, string) {
	t.Helper()
	target := RedisTLSTarget(t, kind)
	opts, err := target.options()
	if err != nil {
		Missing(t, "TLS files of the test services unusable: %v; %s", err, startServicesMsg)
	}
	c := redis.NewUniversalClient(opts)
	ping(t, c, kind+" over TLS at "+strings.Join(target.Addrs, ","))
	prefix := Prefix(t)
	t.Cleanup(func() {
		_ = DeleteKeys(c, prefix)
		_ = c.Close()
	})
	return c, prefix
}

func splitAddrs(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}
