package main

import (
	"bufio"
	"bytes"
	"context"
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

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/api/client"
)

const adminToken = "loadbench-admin-token-0123456789abcdef"

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
	cmd := exec.Command(bin, args...) //nolint:gosec // bin is the seckill binary this program built, or this program itself
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
	if ready == "" {
		return p, nil
	}
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

// peakRSS is the process's VmHWM in bytes.
func (p *proc) peakRSS() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
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

// cpuSeconds is the CPU time (user + system) pid has used, or 0 when it is
// unknown.
func cpuSeconds(pid int) float64 {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ
}

// findSQLServer returns the pid of the local mariadbd, or else mysqld, or 0.
func findSQLServer() int {
	if pid := findProc("mariadbd"); pid != 0 {
		return pid
	}
	return findProc("mysqld")
}

// findProc returns the pid of a process named comm, or 0.
func findProc(comm string) int {
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile("/proc/" + d.Name() + "/comm"); err == nil && strings.TrimSpace(string(b)) == comm {
			return pid
		}
	}
	return 0
}

// startRedis runs a private redis-server without persistence on a free port,
// with the extra arguments given (e.g. --replicaof host port).
func startRedis(dir string, extra ...string) (addr string, pid int, stop func(), err error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return "", 0, nil, fmt.Errorf("no redis-server for a private server (or pass -redis): %w", err)
	}
	port, err := freePort()
	if err != nil {
		return "", 0, nil, err
	}
	//nolint:gosec // redis-server from PATH, with arguments built here
	cmd := exec.Command(bin, append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--dir", dir, "--logfile", filepath.Join(dir, "redis.log")}, extra...)...)
	if err := cmd.Start(); err != nil {
		return "", 0, nil, err
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
			return addr, cmd.Process.Pid, stop, nil
		}
		if time.Now().After(deadline) {
			stop()
			return "", 0, nil, errors.New("private redis-server did not start")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// api talks to a seckill server's admin and metrics endpoints, through the
// client generated from api/openapi.yaml.
type api struct {
	url    string
	client *http.Client
	c      *client.ClientWithResponses
}

func newAPI(url string) *api {
	hc := &http.Client{Timeout: 60 * time.Second}
	c, err := client.NewClientWithResponses(url, client.WithHTTPClient(hc),
		client.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
			r.Header.Set("Authorization", "Bearer "+adminToken)
			return nil
		}))
	if err != nil {
		panic(err) // only a malformed URL, which the bench builds itself
	}
	return &api{url: url, client: hc, c: c}
}

// seed creates a SKU on sale for the next hours and returns its id.
func (a *api) seed(name string, stock int64) (int64, error) {
	return a.seedBuckets(name, stock, 0)
}

// seedBuckets is seed with the SKU's stock split into buckets (0: the
// server's default, one).
func (a *api) seedBuckets(name string, stock int64, buckets int) (int64, error) {
	now := time.Now().UTC()
	spec := client.SKUSpec{
		Name: &name, PriceCents: new(int64(99900)), Stock: &stock, PerUserLimit: new(1),
		StartsAt: new(now.Add(-time.Minute)), EndsAt: new(now.Add(6 * time.Hour)),
	}
	if buckets > 0 {
		spec.Buckets = &buckets
	}
	r, err := a.c.UpsertSKUWithResponse(context.Background(), spec)
	if err != nil {
		return 0, err
	}
	if r.JSON201 == nil {
		return 0, fmt.Errorf("seed %q: %d %s", name, r.StatusCode(), r.Body)
	}
	return r.JSON201.Id, nil
}

type report = client.Report

func (a *api) audit(id int64) (report, error) {
	r, err := a.c.AuditSKUWithResponse(context.Background(), id)
	if err != nil {
		return report{}, err
	}
	if r.JSON200 == nil {
		return report{}, fmt.Errorf("audit %d: %d %s", id, r.StatusCode(), r.Body)
	}
	return *r.JSON200, nil
}

// drained waits until nothing of sku is queued and the audit is consistent.
func (a *api) drained(id int64, timeout time.Duration) (report, error) {
	deadline := time.Now().Add(timeout)
	for {
		r, err := a.audit(id)
		if err == nil && r.QueuedOrders == 0 && r.Queued == 0 && r.Consistent {
			return r, nil
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("sku %d not drained in %s: %+v", id, timeout, r)
			}
			return r, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (a *api) stockLeft(id int64) (int64, error) {
	r, err := a.c.GetSKUWithResponse(context.Background(), id)
	if err != nil {
		return 0, err
	}
	if r.JSON200 == nil {
		return 0, fmt.Errorf("sku %d: %d %s", id, r.StatusCode(), r.Body)
	}
	return r.JSON200.StockLeft, nil
}

// outcomes reads seckill_buy_requests_total by outcome from /metrics.
func (a *api) outcomes() (map[string]float64, error) {
	m, err := a.metrics(`seckill_buy_requests_total{outcome="`)
	out := make(map[string]float64, len(m))
	for k, v := range m {
		out[strings.TrimSuffix(k, `"}`)] = v
	}
	return out, err
}

// ordersPerTx is the mean number of orders per drain transaction so far
// (seckill_drain_batch_size), 0 when unknown.
func (a *api) ordersPerTx() float64 {
	m, err := a.metrics("seckill_drain_batch_size_")
	if err != nil || m["count"] == 0 {
		return 0
	}
	return m["sum"] / m["count"]
}

// metrics reads the /metrics samples whose line starts with prefix, keyed by
// the rest of the name and labels.
func (a *api) metrics(prefix string) (map[string]float64, error) {
	resp, err := a.client.Get(a.url + "/metrics")
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), prefix)
		if !ok {
			continue
		}
		i := strings.LastIndexByte(rest, ' ')
		if i < 0 {
			continue
		}
		v, _ := strconv.ParseFloat(rest[i+1:], 64)
		out[rest[:i]] = v
	}
	return out, sc.Err()
}

func diff(after, before map[string]float64) map[string]float64 {
	d := map[string]float64{}
	for k, v := range after {
		if n := v - before[k]; n != 0 {
			d[k] = n
		}
	}
	return d
}

// startReplica runs a private replica of the redis-server at primary and
// waits until the primary counts it online.
func startReplica(dir, primary string) (stop func(), err error) {
	host, port, _ := strings.Cut(primary, ":")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	_, _, stop, err = startRedis(dir, "--replicaof", host, port)
	if err != nil {
		return nil, err
	}
	c := redis.NewClient(&redis.Options{Addr: primary})
	defer func() { _ = c.Close() }()
	for deadline := time.Now().Add(30 * time.Second); ; {
		info, _ := c.Info(context.Background(), "replication").Result()
		if strings.Contains(info, "connected_slaves:1") && strings.Contains(info, "state=online") {
			return stop, nil
		}
		if time.Now().After(deadline) {
			stop()
			return nil, errors.New("the replica did not come online")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
