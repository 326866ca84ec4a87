package chaostest

import (
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/testutil"
)

// proc is one `seckill serve` process of the run, which the faults kill,
// stop and restart. Its log is checked for panics and data races when the
// test ends. Its methods may be called from any goroutine; none of them
// fails the test. Kill it with kill, not Kill, so that the kill is
// recorded.
type proc struct {
	*testutil.Process

	mu      sync.Mutex
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
	p := &proc{Process: testutil.NewProcess(t, testutil.ProcessConfig{
		Name: name, Bin: seckillBin, Args: []string{"serve"}, Env: env, AddrEnv: "SECKILL_HTTP_ADDR",
	})}
	t.Cleanup(func() {
		p.kill()
		p.checkLog(t)
	})
	return p
}

// stop freezes the process with SIGSTOP; cont lets it go on. The periods
// it was stopped are kept (they bound how stale its answers can be).
func (p *proc) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped.IsZero() && p.Signal(syscall.SIGSTOP) {
		p.stopped = time.Now()
	}
}

func (p *proc) cont() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped.IsZero() {
		return
	}
	p.Signal(syscall.SIGCONT)
	p.stops = append(p.stops, span{p.stopped, time.Now()})
	p.stopped = time.Time{}
}

// stopSpans returns the periods the process was stopped.
func (p *proc) stopSpans() []span {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]span(nil), p.stops...)
}

// kill ends the process with SIGKILL (a crash), waits for it and records
// when.
func (p *proc) kill() {
	p.mu.Lock()
	if !p.stopped.IsZero() {
		p.stops = append(p.stops, span{p.stopped, time.Now()})
		p.stopped = time.Time{}
	}
	p.mu.Unlock()
	if !p.Kill() {
		return
	}
	p.mu.Lock()
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
	_, ok := p.killAfter(t)
	return ok
}

// checkLog fails the test if the process panicked, the runtime aborted it
// or the race detector reported a race.
func (p *proc) checkLog(t *testing.T) {
	if mark, from := p.Crash(); mark != "" {
		t.Errorf("%s: %q in its output (seed %d):\n%s", p.Name, mark, runSeed, from[:min(len(from), 4000)])
	}
}
