package chaostest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
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

// proc is one `seckill serve` process of the run, which the faults kill,
// stop and restart. Its output goes to a log file that is checked for
// panics and data races when the test ends. Its methods may be called from
// any goroutine; none of them fails the test.
type proc struct {
	name string
	env  []string
	addr string
	log  string

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	state   *os.ProcessState
	starts  int
	stopped time.Time // when SIGSTOP was sent; zero while running
	stops   []span    // the periods it was stopped
	kills   []time.Time
}

// span is a period of time.
type span struct{ from, to time.Time }

// newProc prepares a process running `seckill serve` with env (SECKILL_*
// variables only; the test's own environment is not passed on) on a free
// port.
func newProc(t *testing.T, name string, env map[string]string) *proc {
	t.Helper()
	p := &proc{name: name, log: filepath.Join(t.TempDir(), name+".log")}
	p.env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + os.TempDir()}
	for k, v := range env {
		p.env = append(p.env, k+"="+v)
	}
	p.addr = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	p.env = append(p.env, "SECKILL_HTTP_ADDR="+p.addr)
	t.Cleanup(func() {
		p.kill()
		p.checkLog(t)
	})
	return p
}

// URL is the process's base URL.
func (p *proc) URL() string { return "http://" + p.addr }

// start launches the process and waits up to limit until it serves HTTP.
func (p *proc) start(limit time.Duration) error {
	p.mu.Lock()
	if p.cmd != nil {
		p.mu.Unlock()
		return fmt.Errorf("%s already running", p.name)
	}
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		p.mu.Unlock()
		return fmt.Errorf("%s: log: %w", p.name, err)
	}
	p.starts++
	fmt.Fprintf(f, "---- start %d: seckill serve\n", p.starts)
	cmd := exec.Command(seckillBin, "serve")
	cmd.Env = p.env
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		p.mu.Unlock()
		return fmt.Errorf("%s: start: %w", p.name, err)
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

	deadline := time.Now().Add(limit)
	for {
		select {
		case <-exited:
			return fmt.Errorf("%s exited at start: %s\n%s", p.name, p.exitState(), p.tail(30))
		default:
		}
		if p.up() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not come up in %s\n%s", p.name, limit, p.tail(30))
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func (p *proc) up() bool {
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

// pid is the process id, 0 when it does not run.
func (p *proc) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.state != nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// stop freezes the process with SIGSTOP; cont lets it go on. The periods
// it was stopped are kept (they bound how stale its answers can be).
func (p *proc) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && p.state == nil && p.stopped.IsZero() {
		_ = p.cmd.Process.Signal(syscall.SIGSTOP)
		p.stopped = time.Now()
	}
}

func (p *proc) cont() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped.IsZero() {
		return
	}
	if p.cmd != nil && p.state == nil {
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
	}
	p.stops = append(p.stops, span{p.stopped, time.Now()})
	p.stopped = time.Time{}
}

// stopSpans returns the periods the process was stopped.
func (p *proc) stopSpans() []span {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]span(nil), p.stops...)
}

// kill ends the process with SIGKILL (a crash) and waits for it.
func (p *proc) kill() {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	if !p.stopped.IsZero() {
		p.stops = append(p.stops, span{p.stopped, time.Now()})
		p.stopped = time.Time{}
	}
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGCONT) // a stopped process dies only once continued
	_ = cmd.Process.Kill()
	<-exited
	p.mu.Lock()
	p.cmd = nil
	p.kills = append(p.kills, time.Now())
	p.mu.Unlock()
}

// killAfter returns the first time the process was killed after t.
func (p *proc) killAfter(t time.Time) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, k := range p.kills {
		if k.After(t) {
			return k, true
		}
	}
	return time.Time{}, false
}

// killedSince reports whether the process was killed after t.
func (p *proc) killedSince(t time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, k := range p.kills {
		if k.After(t) {
			return true
		}
	}
	return false
}

func (p *proc) exitState() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == nil {
		return "running"
	}
	return p.state.String()
}

// rssKiB is the resident set size of the process from /proc, 0 when it
// does not run.
func (p *proc) rssKiB() int64 {
	pid := p.pid()
	if pid == 0 {
		return 0
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return n
		}
	}
	return 0
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

// checkLog fails the test if the process panicked, the runtime aborted it
// or the race detector reported a race.
func (p *proc) checkLog(t *testing.T) {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return
	}
	for _, bad := range []string{"panic:", "fatal error:", "[recovered]", "WARNING: DATA RACE"} {
		if i := bytes.Index(b, []byte(bad)); i >= 0 {
			end := min(len(b), i+4000)
			t.Errorf("%s: %q in its output (seed %d):\n%s", p.name, bad, runSeed, b[i:end])
			return
		}
	}
}
