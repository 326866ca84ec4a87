package faulttest

import (
	"bytes"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/testutil"
)

// proc is one seckill process (serve, serve --api-only or worker) that a
// scenario starts, kills, stops and restarts. Its log is checked for panics
// when the test ends.
type proc struct {
	*testutil.Process
	t *testing.T
}

// newProc prepares a process running `seckill args...` with env (SECKILL_*
// variables only; the test's own environment is not passed on). With http
// it serves on a free port and is up once /healthz answers; without, it is
// a worker, up once its workers run.
func newProc(t *testing.T, name string, env map[string]string, http bool, args ...string) *proc {
	t.Helper()
	cfg := testutil.ProcessConfig{Name: name, Bin: seckillBin, Args: args, Env: env}
	if http {
		cfg.AddrEnv = "SECKILL_HTTP_ADDR"
	} else {
		cfg.Ready = func(p *testutil.Process) bool {
			return bytes.Count(p.Log(), []byte(`"workers started"`)) >= p.Starts()
		}
	}
	p := &proc{Process: testutil.NewProcess(t, cfg), t: t}
	t.Cleanup(func() {
		p.Kill()
		p.checkLog()
	})
	return p
}

// start launches the process and fails the test unless it is up within 30s.
func (p *proc) start() {
	p.t.Helper()
	if err := p.Start(30 * time.Second); err != nil {
		p.t.Fatal(err)
	}
}

// checkLog fails the test if the process panicked or the runtime aborted it.
func (p *proc) checkLog() {
	if mark, _ := p.Crash(); mark != "" {
		p.t.Errorf("%s: %q in its output\n%s", p.Name, mark, p.Tail(60))
		return
	}
	if p.t.Failed() {
		p.t.Log(p.Tail(25))
	}
}
