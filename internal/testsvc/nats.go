package testsvc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// NATSServer is a nats-server process with JetStream owned by one test, on
// a free port and with its own store directory, for tests that publish to
// JetStream or kill and restart the server. The store outlives a restart.
type NATSServer struct {
	process
	bin  string
	dir  string
	name string // server name: tells this process from another on the port
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
			Missing(t, "nats-server binary not found: %v; %s", err, startServicesMsg)
		}
	}
	s := &NATSServer{bin: bin, dir: t.TempDir(), name: "testsvc_" + RandomID(6)}
	s.process = process{t: t, port: FreePort(t), command: s.command, ready: func(int) error { return s.ready() },
		log: filepath.Join(s.dir, "nats.log")}
	s.Start()
	t.Cleanup(s.Kill)
	return s
}

// URL is the server's client URL, nats://127.0.0.1:<port>.
func (s *NATSServer) URL() string { return "nats://127.0.0.1:" + strconv.Itoa(s.port) }

// command is nats-server's command line on port, with JetStream storing
// in the server's directory.
func (s *NATSServer) command(port int) *exec.Cmd {
	return exec.Command(s.bin, "-a", "127.0.0.1", "-p", strconv.Itoa(port), "-n", s.name,
		"-js", "-sd", filepath.Join(s.dir, "store"), "-l", s.log)
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

// String describes the server for logs.
func (s *NATSServer) String() string { return fmt.Sprintf("nats-server(%s)", s.URL()) }
