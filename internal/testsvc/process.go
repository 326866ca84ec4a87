package testsvc

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"
)

// process is a server process a test owns, on a port of its own: started
// until it answers, restarted on the same port, killed with SIGKILL, and
// signalled. A server type embeds it and says how to run and probe it.
type process struct {
	t    testing.TB
	port int
	// command builds the server's command line for the port.
	command func(port int) *exec.Cmd
	// ready returns nil once the server on the port is the process pid
	// (another test binary may have taken the port) and answers.
	ready func(pid int) error
	// log is the server's log file, named when it exits at start.
	log string

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	started bool
}

// Start (re)starts the server on its port and waits until it answers. On
// the first start a port another process took meanwhile is replaced by a
// new free one; a restart keeps the address.
func (p *process) Start() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return
	}
	for attempt := 0; ; attempt++ {
		err := p.startOnce()
		if err == nil {
			return
		}
		if p.started || attempt == 5 {
			p.t.Fatalf("%s on port %d: %v", p.command(p.port).Path, p.port, err)
		}
		p.port = FreePort(p.t)
	}
}

// startOnce starts the process and waits until it answers on the port.
func (p *process) startOnce() error {
	cmd := p.command(p.port)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := p.ready(cmd.Process.Pid)
		if err == nil {
			p.cmd, p.exited, p.started = cmd, exited, true
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("exited at start (port in use?); see %s", p.log)
		default:
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-exited
			return fmt.Errorf("did not answer: %w", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Kill stops the server at once with SIGKILL (a crash).
func (p *process) Kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(os.Kill)
	<-p.exited
	p.cmd = nil
}

// signal sends sig to the running server.
func (p *process) signal(sig syscall.Signal) {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		p.t.Fatalf("port %d: not running", p.port)
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("port %d: %v: %v", p.port, sig, err)
	}
}
