package main

// Process and service helpers, after bench/loadbench/procs.go and main.go.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"
)

// proc is a child process the benchmark started.
type proc struct {
	name string
	cmd  *exec.Cmd
	url  string
	log  string
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, err
	}
	return port, nil
}

// startProc runs bin with args and env (added to this process's environment
// without any SECKILL_ variable of its own), logging to dir/name.log, and
// waits until GET url+ready answers 200.
func startProc(dir, name, bin string, args, env []string, url, ready string) (*proc, error) {
	logPath := filepath.Join(dir, name+".log")
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...) //nolint:gosec // bin is the seckill binary this program built
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SECKILL_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdout, cmd.Stderr = lf, lf
	if err := cmd.Start(); err != nil {
		_ = lf.Close()
		return nil, err
	}
	go func() { _ = cmd.Wait(); _ = lf.Close() }()
	p := &proc{name: name, cmd: cmd, url: url, log: logPath}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(url + ready)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		if time.Now().After(deadline) || cmd.ProcessState != nil {
			p.stop()
			return nil, fmt.Errorf("%s did not become ready; log %s:\n%s", name, logPath, tail(logPath, 20))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop sends SIGTERM and waits for the exit (SIGKILL after 30s).
func (p *proc) stop() {
	if p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if p.cmd.Process.Signal(syscall.Signal(0)) != nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = p.cmd.Process.Kill()
}

func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// startRedis runs a private redis-server without persistence on a free port.
func startRedis(dir string) (addr string, stop func(), err error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return "", nil, fmt.Errorf("no redis-server for a private server (or pass -redis): %w", err)
	}
	port, err := freePort()
	if err != nil {
		return "", nil, err
	}
	//nolint:gosec // redis-server from PATH, with arguments built here
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--dir", dir, "--logfile", filepath.Join(dir, "redis.log"))
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop = func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	addr = "127.0.0.1:" + strconv.Itoa(port)
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer func() { _ = c.Close() }()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c.Ping(context.Background()).Err() == nil {
			return addr, stop, nil
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, errors.New("private redis-server did not start")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func cleanRedis(addr, prefix string) {
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer func() { _ = c.Close() }()
	ctx := context.Background()
	iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	var batch []string
	for iter.Next(ctx) {
		if batch = append(batch, iter.Val()); len(batch) == 500 {
			c.Unlink(ctx, batch...)
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		c.Unlink(ctx, batch...)
	}
}

// createDB creates a database on the server of base and returns its DSN and
// a function that drops it.
func createDB(base, name string) (string, func(), error) {
	mc, err := mysql.ParseDSN(base)
	if err != nil {
		return "", nil, fmt.Errorf("mysql dsn: %w", err)
	}
	mc.DBName = ""
	admin, err := sql.Open("mysql", mc.FormatDSN())
	if err != nil {
		return "", nil, err
	}
	if _, err := admin.Exec("CREATE DATABASE `" + name + "` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		_ = admin.Close()
		return "", nil, fmt.Errorf("create database %s: %w", name, err)
	}
	mc.DBName = name
	var version string
	_ = admin.QueryRow("SELECT VERSION()").Scan(&version)
	fmt.Printf("database %s on %s (%s)\n", name, mc.Addr, version)
	return mc.FormatDSN(), func() {
		if _, err := admin.Exec("DROP DATABASE IF EXISTS `" + name + "`"); err != nil {
			fmt.Fprintf(os.Stderr, "fairbench: database %s left behind: %v\n", name, err)
		}
		_ = admin.Close()
	}, nil
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return "load average " + strings.Join(f[:3], " ")
}
