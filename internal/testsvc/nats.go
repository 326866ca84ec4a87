package testsvc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// NATSServer is a nats-server process with JetStream owned by one test, on
// a free port and with its own store directory, for tests that publish to
// JetStream or kill and restart the server. The store outlives a restart.
type NATSServer struct {
	t    testing.TB
	bin  string
	dir  string
	name string // server name: tells this process from another on the port
	port int

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	started bool
}

// StartNATS starts a private nats-server with JetStream (file storage under
// a temporary directory) and kills it when the test ends. It needs the
// nats-server binary that scripts/test-services.sh installs, and fails the
// test without it.
func StartNATS(t testing.TB) *NATSServer {
	t.Helper()
	bin, err := exec.LookPath("nats-server")
	if err != nil {
		// Debian installs it in /usr/sbin, which not every PATH has.
		bin = "/usr/sbin/nats-server"
		if _, serr := os.Stat(bin); serr != nil {
			t.Fatalf("nats-server binary not found (%v); run scripts/test-services.sh, which installs it", err)
		}
	}
	s := &NATSServer{t: t, bin: bin, dir: t.TempDir(), name: "testsvc_" + RandomID(6), port: FreePort(t)}
	s.Start()
	t.Cleanup(s.Kill)
	return s
}

// URL is the server's client URL, nats://127.0.0.1:<port>.
func (s *NATSServer) URL() string { return "nats://127.0.0.1:" + strconv.Itoa(s.port) }

// Start (re)starts the server on its port and store directory and waits
// until JetStream answers. On the first start a port another process took
// meanwhile is replaced by a new free one; a restart keeps the URL.
func (s *NATSServer) Start() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return
	}
	for attempt := 0; ; attempt++ {
		err := s.startOnce()
		if err == nil {
			return
		}
		if s.started || attempt == 5 {
			s.t.Fatalf("%s: %v", s, err)
		}
		s.port = FreePort(s.t)
	}
}

// startOnce starts the process and waits until the server on the port is
// this process and its JetStream answers.
func (s *NATSServer) startOnce() error {
	cmd := exec.Command(s.bin, "-a", "127.0.0.1", "-p", strconv.Itoa(s.port), "-n", s.name,
		"-js", "-sd", filepath.Join(s.dir, "store"), "-l", filepath.Join(s.dir, "nats.log"))
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
		err := s.ready()
		if err == nil {
			s.cmd, s.exited, s.started = cmd, exited, true
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("exited at start (port in use?); see %s", filepath.Join(s.dir, "nats.log"))
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

// ready connects once and checks that the server is this one (by name)
// and that its JetStream answers.
func (s *NATSServer) ready() error {
	nc, err := nats.Connect(s.URL(), nats.Timeout(500*time.Millisecond), nats.NoReconnect())
	if err != nil {
		return err
	}
	defer nc.Close()
	if got := nc.ConnectedServerName(); got != s.name {
		return fmt.Errorf("another server (%q) on the port", got)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err = js.AccountInfo(ctx)
	return err
}

// Kill stops the server at once with SIGKILL (a crash).
func (s *NATSServer) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(os.Kill)
	<-s.exited
	s.cmd = nil
}

// String describes the server for logs.
func (s *NATSServer) String() string { return fmt.Sprintf("nats-server(%s)", s.URL()) }
