package testsvc

import (
	"errors"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/testutil"
)

// scripts/test-services.sh --only starts the services it names and prints
// their variables alone, as a load test's server step needs (Redis and
// MariaDB); an unknown service is refused before anything starts.
func TestServicesScriptOnly(t *testing.T) {
	if Env(t, EnvRedis) != "127.0.0.1:6379" {
		Missing(t, "the script starts Redis on 127.0.0.1:6379; %s is another", EnvRedis)
	}
	if cfg, err := mysql.ParseDSN(Env(t, EnvMySQL)); err != nil || cfg.Addr != "127.0.0.1:3306" {
		Missing(t, "the script starts MariaDB on 127.0.0.1:3306; %s is another", EnvMySQL)
	}
	root, err := testutil.ModuleRoot()
	require.NoError(t, err)
	script := filepath.Join(root, "scripts", "test-services.sh")

	out, err := exec.Command("bash", script, "--env", "--only", "redis,mysql").Output()
	require.NoError(t, err)
	assert.Equal(t, "export SECKILL_TEST_REDIS_ADDR=127.0.0.1:6379\n"+
		"export SECKILL_TEST_MYSQL_DSN='root:@tcp(127.0.0.1:3306)/'\n", string(out))

	out, err = exec.Command("bash", script, "--only", "redis,nats").CombinedOutput()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "%v: %s", err, out)
	assert.Equal(t, 2, exit.ExitCode())
	assert.Contains(t, string(out), "unknown service nats")
}
