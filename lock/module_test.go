package lock_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// goTool returns the go command, or skips the test without one.
func goTool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("the go command is not on PATH: %v", err)
	}
	return p
}

// goCmd runs go with args in dir and returns its output; GOFLAGS gains
// -mod=mod, the rest of the environment (GOMODCACHE, GOPROXY) is the
// caller's.
func goCmd(t *testing.T, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goTool(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod "+os.Getenv("GOFLAGS"), "GOWORK=off")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go %s in %s:\n%s", strings.Join(args, " "), dir, out)
	return string(out)
}

// allowedDeps are the modules package lock may depend on besides the
// standard library: go-redis and what go-redis needs.
var allowedDeps = []string{
	"github.com/seckill/seckill/lock",
	"github.com/redis/go-redis/v9",
	"github.com/cespare/xxhash/v2",
	"github.com/dgryski/go-rendezvous",
	"go.uber.org/atomic",
	"golang.org/x/sys",
}

// TestDependencies: package lock links nothing of an HTTP or SQL stack,
// nothing of seckill's internal packages and not Prometheus, which only
// lock/lockmetrics brings.
func TestDependencies(t *testing.T) {
	deps := func(pkg string) []string {
		out := goCmd(t, ".", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg)
		return strings.Fields(out)
	}
	for _, d := range deps(".") {
		allowed := false
		for _, a := range allowedDeps {
			allowed = allowed || d == a || strings.HasPrefix(d, a+"/")
		}
		assert.True(t, allowed, "package lock depends on %s", d)
		assert.NotContains(t, d, "/internal/locktest")
	}
	for _, d := range deps("./lockmetrics") {
		for _, banned := range []string{"gin-gonic", "gorm", "seckill/seckill/internal", "database/sql"} {
			assert.NotContains(t, d, banned, "lockmetrics depends on %s", d)
		}
	}
}

// TestImportFromOutside builds a throwaway module outside the repository
// that requires the package (replaced by this checkout), and runs a program
// that takes and releases a lock on the Redis of SECKILL_TEST_REDIS_ADDR.
func TestImportFromOutside(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module")
	}
	addr := os.Getenv(envRedis)
	if addr == "" {
		t.Skipf("%s is not set", envRedis)
	}
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	dir := t.TempDir()
	write := func(name, text string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	write("go.mod", "module example.com/locktry\n\ngo 1.26\n\n"+
		"require github.com/seckill/seckill v0.0.0\n\n"+
		"replace github.com/seckill/seckill => "+root+"\n")
	// The checkout's checksums cover every module the package can need.
	sums, err := os.ReadFile(filepath.Join(root, "go.sum"))
	require.NoError(t, err)
	write("go.sum", string(sums))
	write("main.go", `package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/lock"
)

func main() {
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv("SECKILL_TEST_REDIS_ADDR")})
	defer rdb.Close()
	locks := lock.New(rdb, lock.WithPrefix("locktry:"+rand.Text()[:8]+":"))
	defer locks.Close()
	ctx := context.Background()

	l, err := locks.Lock(ctx, "report", 10*time.Second, lock.WithWait(time.Second))
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	_, err = locks.TryLock(ctx, "report", 10*time.Second)
	fmt.Println("second try:", err, errors.Is(err, lock.ErrNotObtained))
	fmt.Println("unlock:", l.Unlock(ctx))
}
`)
	goCmd(t, dir, "mod", "tidy")
	out := goCmd(t, dir, "run", ".")
	assert.Equal(t, "second try: lock: not obtained true\nunlock: <nil>\n", out)
	deps := goCmd(t, dir, "list", "-deps", ".")
	assert.NotContains(t, deps, "prometheus", "an importer of lock does not link Prometheus")
}
