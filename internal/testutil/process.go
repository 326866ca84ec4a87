package testutil

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ProcessConfig describes a process a test runs.
type ProcessConfig struct {
	// Name names the process in messages and its log file.
	Name string
	// Bin is the binary to run (see MainWithBinary) and Args its arguments.
	Bin  string
	Args []string
	// Env is the process's environment besides PATH, HOME and TMPDIR; the
	// test's own environment is not passed on.
	Env map[string]string
	// AddrEnv, when set, gives the process a free port on 127.0.0.1 in this
	// variable (host:port), and the process is up once GET /healthz there
	// answers 200.
	AddrEnv string
	// Ready, when set, reports whether the process is up instead.
	Ready func(p *Process) bool
}

// Process is a child process of a test that the test starts, kills, stops
// and restarts. Its output goes to a log file, appended to across restarts,
// for the test to read and to check for crashes. Its methods may be called
// from any goroutine; none of them fails the test.
type Process struct {
	// Name is the name the process was configured with.
	Name string

	bin   string
	args  []string
	env   []string
	addr  string
	log   string
	ready func(p *Process) bool

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	state  *os.ProcessState
	starts int
}

// NewProcess prepares a process from cfg without starting it; it is killed
// when the test ends.
func NewProcess(t testing.TB, cfg ProcessConfig) *Process {
	t.Helper()
	p := &Process{
		Name: cfg.Name, bin: cfg.Bin, args: cfg.Args, ready: cfg.Ready,
		log: filepath.Join(t.TempDir(), cfg.Name+".log"),
		env: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + os.TempDir()},
	}
	for k, v := range cfg.Env {
		p.env = append(p.env, k+"="+v)
	}
	if cfg.AddrEnv != "" {
		p.addr = fmt.Sprintf("127.0.0.1:%d", FreePort(t))
		p.env = append(p.env, cfg.AddrEnv+"="+p.addr)
	}
	if p.ready == nil {
		p.ready = func(p *Process) bool { return Healthy(p.URL()) }
	}
	t.Cleanup(func() { p.Kill() })
	return p
}

// URL is the base URL of the process's HTTP address ("http://" alone when
// it has none).
func (p *Process) URL() string { return "http://" + p.addr }

// Start launches the process and waits up to limit until it is up. It
// fails when the process already runs, exits meanwhile or is not up in
// time; the error then ends with the last lines of the log.
func (p *Process) Start(limit time.Duration) error {
	p.mu.Lock()
	if p.cmd != nil {
		p.mu.Unlock()
		return fmt.Errorf("%s already running", p.Name)
	}
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		p.mu.Unlock()
		return fmt.Errorf("%s: log: %w", p.Name, err)
	}
	p.starts++
	fmt.Fprintf(f, "---- start %d: %s %s\n", p.starts, filepath.Base(p.bin), strings.Join(p.args, " "))
	cmd := exec.Command(p.bin, p.args...) //nolint:gosec // the binary the test built
	cmd.Env = p.env
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		p.mu.Unlock()
		return fmt.Errorf("%s: start: %w", p.Name, err)
	}
	exited := make(chan struct{})
	p.cmd, p.exited, p.state = cmd, exited, nil
	p.mu.Unlock()
	go func() {
		_ = cmd.Wait()
		_ = f.Close()
		p.mu.Lock()
		p.state = cmd.ProcessState
		p.mu.Unlock()
		close(exited)
	}()

	deadline := time.Now().Add(limit)
	for {
		select {
		case <-exited:
			return fmt.Errorf("%s exited at start: %s\n%s", p.Name, p.ExitState(), p.Tail(30))
		default:
		}
		if p.ready(p) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not come up in %s\n%s", p.Name, limit, p.Tail(30))
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// Healthy reports whether GET base/healthz answers 200 within a second.
func Healthy(base string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Starts is how many times the process was started.
func (p *Process) Starts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.starts
}

// Running reports whether the process is started and has not exited.
func (p *Process) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil && p.state == nil
}

// Pid is the process id, 0 when it does not run.
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.state != nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// RSSKiB is the process's resident set size in KiB (VmRSS in
// /proc/<pid>/status, so Linux only); 0 when it does not run or the figure
// cannot be read.
func (p *Process) RSSKiB() int64 {
	pid := p.Pid()
	if pid == 0 {
		return 0
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

// Signal sends sig to the process and reports whether it was running.
func (p *Process) Signal(sig syscall.Signal) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.state != nil {
		return false
	}
	_ = p.cmd.Process.Signal(sig)
	return true
}

// Kill ends the process with SIGKILL (a crash), continuing it first if it
// was stopped, and waits for it. It reports whether there was a process to
// kill.
func (p *Process) Kill() bool {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil {
		return false
	}
	_ = cmd.Process.Signal(syscall.SIGCONT) // a stopped process dies only once continued
	_ = cmd.Process.Kill()
	<-exited
	p.mu.Lock()
	p.cmd = nil
	p.mu.Unlock()
	return true
}

// StopGracefully sends SIGTERM and waits up to limit for the process to
// exit (killing it after that); it returns how long that took, and an error
// unless the process exited with status 0.
func (p *Process) StopGracefully(limit time.Duration) (time.Duration, error) {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil {
		return 0, errors.New("not running")
	}
	start := time.Now()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(limit):
		p.Kill()
		return time.Since(start), fmt.Errorf("%s did not exit within %s of SIGTERM", p.Name, limit)
	}
	took := time.Since(start)
	p.mu.Lock()
	p.cmd = nil
	st := p.state
	p.mu.Unlock()
	if !st.Success() {
		return took, fmt.Errorf("%s exited with %s", p.Name, st)
	}
	return took, nil
}

// ExitState describes how the process last exited, "running" while it
// runs.
func (p *Process) ExitState() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == nil {
		return "running"
	}
	return p.state.String()
}

// Log returns the process's log so far.
func (p *Process) Log() []byte {
	b, _ := os.ReadFile(p.log)
	return b
}

// Tail returns the last n lines of the process's log, headed by its name.
func (p *Process) Tail(n int) string {
	lines := strings.Split(strings.TrimRight(string(p.Log()), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return p.Name + " log:\n  " + strings.Join(lines, "\n  ")
}

// LogCount counts the occurrences of s in the process's log.
func (p *Process) LogCount(s string) int {
	return bytes.Count(p.Log(), []byte(s))
}

// crashMarks are what a Go process writes when it panics, the runtime
// aborts it or the race detector finds a race.
var crashMarks = []string{"panic:", "fatal error:", "[recovered]", "WARNING: DATA RACE"}

// Crash looks in the process's log for a panic, a runtime abort or a data
// race report; it returns the mark found and the log from there on, or ""
// when there is none.
func (p *Process) Crash() (mark string, from []byte) {
	b := p.Log()
	for _, m := range crashMarks {
		if i := bytes.Index(b, []byte(m)); i >= 0 {
			return m, b[i:]
		}
	}
	return "", nil
}

// FreePort returns a port on 127.0.0.1 that is free now, chosen at random
// in 10000-19999: below the kernel's ephemeral range (32768 and up on
// Linux) and clear of the test services' ports. A port of the ephemeral
// range may be taken by any outgoing connection between this call and the
// bind of the server it is for, and the tests make outgoing connections by
// the thousand.
func FreePort(t testing.TB) int {
	t.Helper()
	for range 1000 {
		port := 10000 + rand.IntN(10000)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		_ = l.Close()
		return port
	}
	t.Fatalf("free port: none free in 10000-19999")
	return 0
}
