package faulttest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// proc is one seckill process (serve, serve --api-only or worker) that a
// scenario starts, kills, stops and restarts. Its output goes to a log file
// that is checked for panics when the test ends.
type proc struct {
	t    *testing.T
	name string
	args []string
	env  []string
	addr string // HTTP address; "" for a worker-only process
	log  string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	state  *os.ProcessState
	starts int
}

// newProc prepares a process running `seckill args...` with env (SECKILL_*
// variables only; the test's own environment is not passed on).
func newProc(t *testing.T, name string, env map[string]string, http bool, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, name: name, args: args, log: filepath.Join(t.TempDir(), name+".log")}
	p.env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + os.TempDir()}
	for k, v := range env {
		p.env = append(p.env, k+"="+v)
	}
	if http {
		p.addr = fmt.Sprintf("127.0.0.1:%d", freePort(t))
		p.env = append(p.env, "SECKILL_HTTP_ADDR="+p.addr)
	}
	t.Cleanup(func() {
		p.kill()
		p.checkLog()
	})
	return p
}

// URL is the process's base URL.
func (p *proc) URL() string { return "http://" + p.addr }

// start launches the process and waits until it serves HTTP (or, for a
// worker, until its workers run).
func (p *proc) start() {
	t := p.t
	t.Helper()
	p.mu.Lock()
	if p.cmd != nil {
		p.mu.Unlock()
		t.Fatalf("%s already running", p.name)
	}
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		p.mu.Unlock()
		t.Fatalf("%s: log: %v", p.name, err)
	}
	p.starts++
	fmt.Fprintf(f, "---- start %d: seckill %s\n", p.starts, strings.Join(p.args, " "))
	cmd := exec.Command(seckillBin, p.args...)
	cmd.Env = p.env
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		p.mu.Unlock()
		t.Fatalf("%s: start: %v", p.name, err)
	}
	exited := make(chan struct{})
	p.cmd, p.exited, p.state = cmd, exited, nil
	p.mu.Unlock()
	go func() {
		_ = cmd.Wait()
		f.Close()
		p.mu.Lock()
		p.state = cmd.ProcessState
		p.mu.Unlock()
		close(exited)
	}()

	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-exited:
			t.Fatalf("%s exited at start: %s\n%s", p.name, p.exitState(), p.tail(30))
		default:
		}
		if p.up() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not come up in 30s\n%s", p.name, p.tail(30))
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func (p *proc) up() bool {
	if p.addr == "" {
		b, _ := os.ReadFile(p.log)
		return bytes.Count(b, []byte(`"workers started"`)) >= p.starts
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", p.URL()+"/healthz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// running reports whether the process is started and has not exited.
func (p *proc) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil && p.state == nil
}

// signal sends sig to the process.
func (p *proc) signal(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && p.state == nil {
		_ = p.cmd.Process.Signal(sig)
	}
}

// kill ends the process with SIGKILL (a crash) and waits for it.
func (p *proc) kill() {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGCONT) // a stopped process dies only once continued
	_ = cmd.Process.Kill()
	<-exited
	p.mu.Lock()
	p.cmd = nil
	p.mu.Unlock()
}

// stopGracefully sends SIGTERM and waits up to limit for the process to
// exit; it returns how long that took and how the process ended.
func (p *proc) stopGracefully(limit time.Duration) (time.Duration, error) {
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
		p.kill()
		return time.Since(start), fmt.Errorf("%s did not exit within %s of SIGTERM", p.name, limit)
	}
	took := time.Since(start)
	p.mu.Lock()
	p.cmd = nil
	st := p.state
	p.mu.Unlock()
	if !st.Success() {
		return took, fmt.Errorf("%s exited with %s", p.name, st)
	}
	return took, nil
}

func (p *proc) exitState() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == nil {
		return "running"
	}
	return p.state.String()
}

// tail returns the last n lines of the process's log.
func (p *proc) tail(n int) string {
	b, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return p.name + " log:\n  " + strings.Join(lines, "\n  ")
}

// logCount counts the log lines that contain s.
func (p *proc) logCount(s string) int {
	b, _ := os.ReadFile(p.log)
	return bytes.Count(b, []byte(s))
}

// checkLog fails the test if the process panicked or the runtime aborted it.
func (p *proc) checkLog() {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return
	}
	for _, bad := range []string{"panic:", "fatal error:", "[recovered]", "WARNING: DATA RACE"} {
		if bytes.Contains(b, []byte(bad)) {
			p.t.Errorf("%s: %q in its output\n%s", p.name, bad, p.tail(60))
			return
		}
	}
	if p.t.Failed() {
		p.t.Log(p.tail(25))
	}
}
