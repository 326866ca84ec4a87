package faulttest

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testutil"
)

// mariaDB is a mariadbd process owned by one test, with its own data
// directory and port, so the test can kill and restart it without touching
// the shared server.
type mariaDB struct {
	t    *testing.T
	bin  string
	dir  string
	port int

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// startMariaDB initialises a data directory, starts the server and creates
// the database seckill; the server is killed when the test ends.
func startMariaDB(t *testing.T) *mariaDB {
	t.Helper()
	bin, err := exec.LookPath("mariadbd")
	if err != nil {
		if bin, err = exec.LookPath("/usr/sbin/mariadbd"); err != nil {
			testsvc.Missing(t, "mariadbd not found: %v; scripts/test-services.sh installs mariadb-server", err)
		}
	}
	install, err := exec.LookPath("mariadb-install-db")
	if err != nil {
		testsvc.Missing(t, "mariadb-install-db not found: %v; scripts/test-services.sh installs mariadb-server", err)
	}
	m := &mariaDB{t: t, bin: bin, dir: t.TempDir(), port: testutil.FreePort(t)}
	args := []string{"--no-defaults", "--datadir=" + m.data(), "--auth-root-authentication-method=normal", "--skip-test-db"}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	if out, err := exec.Command(install, args...).CombinedOutput(); err != nil {
		t.Fatalf("mariadb-install-db: %v\n%s", err, out)
	}
	t.Cleanup(m.kill)
	m.start()
	db := m.open("")
	defer db.Close()
	_, err = db.Exec("CREATE DATABASE seckill CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
	require.NoError(t, err)
	return m
}

func (m *mariaDB) data() string { return filepath.Join(m.dir, "data") }

// DSN selects the database seckill.
func (m *mariaDB) DSN() string {
	return fmt.Sprintf("root:@tcp(127.0.0.1:%d)/seckill?parseTime=true&loc=UTC", m.port)
}

func (m *mariaDB) open(db string) *sql.DB {
	d, err := sql.Open("mysql", fmt.Sprintf("root:@tcp(127.0.0.1:%d)/%s", m.port, db))
	require.NoError(m.t, err)
	return d
}

// start (re)starts the server on its data directory and port and waits
// until it answers.
func (m *mariaDB) start() {
	m.t.Helper()
	m.mu.Lock()
	if m.cmd != nil {
		m.mu.Unlock()
		return
	}
	args := []string{"--no-defaults", "--datadir=" + m.data(),
		"--socket=" + filepath.Join(m.dir, "mysqld.sock"), "--port=" + strconv.Itoa(m.port),
		"--bind-address=127.0.0.1", "--skip-grant-tables", "--skip-log-bin",
		"--pid-file=" + filepath.Join(m.dir, "mysqld.pid"), "--log-error=" + filepath.Join(m.dir, "error.log"),
		"--innodb-buffer-pool-size=32M", "--max-connections=500"}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	cmd := exec.Command(m.bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		m.mu.Unlock()
		m.t.Fatalf("start mariadbd: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	m.cmd, m.exited = cmd, exited
	m.mu.Unlock()

	db := m.open("")
	defer db.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := db.PingContext(ctx)
		cancel()
		if err == nil {
			return
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(filepath.Join(m.dir, "error.log"))
			m.t.Fatalf("mariadbd exited at start:\n%s", b)
		default:
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("mariadbd on port %d did not answer in 30s: %v", m.port, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kill ends the server with SIGKILL (a crash; InnoDB recovers at the next
// start).
func (m *mariaDB) kill() {
	m.mu.Lock()
	cmd, exited := m.cmd, m.exited
	m.cmd = nil
	m.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGCONT)
	_ = cmd.Process.Kill()
	<-exited
}

// signal sends sig (SIGSTOP, SIGCONT) to the server.
func (m *mariaDB) signal(sig syscall.Signal) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil {
		_ = m.cmd.Process.Signal(sig)
	}
}
