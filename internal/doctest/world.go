package doctest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testutil"
)

// What the examples name, and what a run of them may write.
const (
	redisAddr = "127.0.0.1:6379"
	mysqlAddr = "127.0.0.1:3306"
	// The database and user of the README's DSN
	// seckill:secret@tcp(127.0.0.1:3306)/seckill, which the README tells the
	// reader to create; the help examples use the same database as root.
	database = "seckill"
	user     = "seckill"
	password = "secret"
	lockPath = "seckill-doctest.lock" // in the system's temporary directory
)

var (
	// Databases and key prefixes the examples write to.
	databases = []string{"seckill", "seckill_load"}
	prefixes  = []string{"seckill:", "rate:seckill:", "load:", "rate:load:"}
	// Ports the examples' servers listen on.
	ports = []string{"8080", "9000"}
)

// World is what the examples run against: the services of
// scripts/test-services.sh at the addresses the examples name, the seckill
// binary, and the repository as the working directory.
type World struct {
	Root string // the repository
	bin  string // the directory holding the seckill binary
	tmp  string
}

// Setup prepares the world for t: it takes a lock that keeps other runs of
// the examples on this machine out until t ends, checks that the services
// are where the examples look for them and their ports are free, builds
// seckill, and empties what the examples write, again when t ends.
func Setup(t *testing.T) *World {
	t.Helper()
	testutil.SkipShort(t, "the examples run servers against Redis and MariaDB")
	if got := testsvc.Env(t, testsvc.EnvRedis); got != redisAddr {
		testsvc.Missing(t, "the examples name Redis at %s; %s is %s", redisAddr, testsvc.EnvRedis, got)
	}
	cfg, err := mysql.ParseDSN(testsvc.Env(t, testsvc.EnvMySQL))
	if err != nil || cfg.Addr != mysqlAddr || cfg.User != "root" || cfg.Passwd != "" {
		testsvc.Missing(t, "the examples name MariaDB at %s as root without a password; %s is another", mysqlAddr, testsvc.EnvMySQL)
	}
	unlock := lock(t)
	t.Cleanup(unlock)
	for _, p := range ports {
		l, err := net.Listen("tcp", ":"+p)
		if err != nil {
			testsvc.Missing(t, "port %s, where the examples' servers listen, is taken: %v", p, err)
		}
		_ = l.Close()
	}

	root, err := testutil.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	w := &World{Root: root, tmp: t.TempDir()}
	w.bin = filepath.Join(w.tmp, "bin")
	if err := os.Mkdir(w.bin, 0o750); err != nil {
		t.Fatal(err)
	}
	if _, err := testutil.Build(w.bin, "./cmd/seckill", raceEnabled); err != nil {
		t.Fatal(err)
	}

	cfg.DBName = ""
	admin, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	if err := reset(admin, rdb, true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := reset(admin, rdb, false); err != nil {
			t.Errorf("clean up after the examples: %v", err)
		}
		_ = admin.Close()
		_ = rdb.Close()
	})
	return w
}

// reset deletes the examples' databases, user and keys, and with create
// makes the database and user the README tells the reader to create.
func reset(admin *sql.DB, rdb *redis.Client, create bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var errs []error
	for _, p := range prefixes {
		errs = append(errs, testsvc.DeleteKeys(rdb, p))
	}
	stmts := []string{}
	for _, db := range databases {
		stmts = append(stmts, "DROP DATABASE IF EXISTS `"+db+"`")
	}
	stmts = append(stmts, fmt.Sprintf("DROP USER IF EXISTS '%s'@'%%', '%s'@'localhost'", user, user))
	if create {
		stmts = append(stmts,
			"CREATE DATABASE `"+database+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
			fmt.Sprintf("CREATE USER '%s'@'%%' IDENTIFIED BY '%s'", user, password),
			fmt.Sprintf("CREATE USER '%s'@'localhost' IDENTIFIED BY '%s'", user, password),
			fmt.Sprintf("GRANT ALL ON `%s`.* TO '%s'@'%%'", database, user),
			fmt.Sprintf("GRANT ALL ON `%s`.* TO '%s'@'localhost'", database, user),
		)
	}
	for _, s := range stmts {
		if _, err := admin.ExecContext(ctx, s); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s, err))
		}
	}
	return errors.Join(errs...)
}

// lock takes an exclusive lock on a file in the temporary directory, so two
// runs of the examples (two go test processes) take turns on the fixed ports,
// database and keys; it waits up to 10 minutes.
func lock(t *testing.T) (unlock func()) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(os.TempDir(), lockPath), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Minute)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			_ = f.Close()
			t.Fatalf("another run of the examples held %s for 10 minutes", f.Name())
		}
		time.Sleep(200 * time.Millisecond)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}
}

// environ is a session's environment: this process's without any SECKILL_
// variable, with the seckill binary first on PATH.
func (w *World) environ() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "SECKILL_") || strings.HasPrefix(kv, "PATH=") || strings.HasPrefix(kv, "TMPDIR=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "PATH="+w.bin+string(os.PathListSeparator)+os.Getenv("PATH"))
}
