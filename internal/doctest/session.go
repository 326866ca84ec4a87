package doctest

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// prelude defines, in every session, what the package comment describes:
// seckill and `go run ./cmd/seckill` run the binary of the run, serve and
// worker in the background once ready, and curl fails on an HTTP error.
const prelude = `set -o pipefail
seckill() {
	case $(__seckill_command "$@") in
	serve|worker) __seckill_server "$@" ;;
	*) command seckill "$@" ;;
	esac
}
__seckill_command() {
	while [ $# -gt 0 ]; do
		case $1 in
		-c|--config) shift 2 ;;
		-*) shift ;;
		*) printf '%s' "$1"; return ;;
		esac
	done
}
go() {
	if [ "$1" = run ] && [ "$2" = ./cmd/seckill ]; then
		shift 2
		seckill "$@"
	else
		command go "$@"
	fi
}
curl() {
	local a
	for a in "$@"; do
		case $a in
		--fail|--fail-with-body) command curl "$@"; return ;;
		--*) ;;
		-*f*) command curl "$@"; return ;;
		esac
	done
	command curl --fail-with-body "$@"
}
__seckill_server() {
	local kind=serve addr=${SECKILL_HTTP_ADDR:-:8080} rec i
	case " $* " in *" worker "*|*" --workers-only "*) kind=worker ;; esac
	case $addr in :*) addr=127.0.0.1$addr ;; esac
	[ "$kind" = serve ] && __seckill_stop "$addr"
	rec=$__doc_dir/servers/$BASHPID.$RANDOM
	# Each record is written whole (a .tmp renamed): a reader never sees
	# one empty.
	( command seckill "$@" >"$rec.log" 2>&1 &
	  echo "$! $kind $addr" >"$rec.tmp" && mv "$rec.tmp" "$rec"
	  wait $!
	  echo $? >"$rec.exit.tmp" && mv "$rec.exit.tmp" "$rec.exit" ) &
	for i in $(seq 1 1200); do
		if [ -f "$rec.exit" ]; then
			echo "seckill $* exited with $(cat "$rec.exit") before it was ready:" >&2
			tail -n 20 "$rec.log" >&2
			return 1
		fi
		if [ -f "$rec" ]; then
			if [ "$kind" = serve ]; then
				[ "$(command curl -s -o /dev/null -w '%{http_code}' "http://$addr/healthz")" = 200 ] && return 0
			else
				grep -q 'workers started' "$rec.log" && return 0
			fi
		fi
		sleep 0.05
	done
	echo "seckill $* was not ready within 60s" >&2
	return 1
}
__seckill_stop() {
	local rec pid kind addr i
	for rec in "$__doc_dir"/servers/*; do
		case $rec in *.log|*.exit|*.tmp|*'*') continue ;; esac
		read -r pid kind addr <"$rec"
		if [ "$kind" = serve ] && [ "$addr" = "$1" ] && [ ! -f "$rec.exit" ]; then
			kill -TERM "$pid"
			for i in $(seq 1 600); do [ -f "$rec.exit" ] && break; sleep 0.05; done
		fi
	done
}
`

// Session is one bash process that runs examples in order.
type Session struct {
	t    *testing.T
	w    *World
	dir  string
	bash *exec.Cmd
	in   io.WriteCloser
	n    int
	vals map[string]string // placeholder values kept
}

// NewSession starts a session in w.
func (w *World) NewSession(t *testing.T) *Session {
	t.Helper()
	dir, err := os.MkdirTemp(w.tmp, "session-")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"servers", "tmp"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o750); err != nil {
			t.Fatal(err)
		}
	}
	bash := exec.Command("bash", "--noprofile", "--norc")
	bash.Dir = w.Root
	bash.Env = append(w.environ(), "TMPDIR="+filepath.Join(dir, "tmp"))
	in, err := bash.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	bash.Stdout, bash.Stderr = io.Discard, io.Discard
	// Its own process group, so that Close ends what the examples left
	// running; and it dies with the test process.
	bash.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := bash.Start(); err != nil {
		t.Fatal(err)
	}
	s := &Session{t: t, w: w, dir: dir, bash: bash, in: in, vals: map[string]string{}}
	if _, err := fmt.Fprintf(in, "__doc_dir=%s\n%s\n", shellQuote(dir), prelude); err != nil {
		t.Fatal(err)
	}
	return s
}

// Run runs the block's commands in order and reports the first that fails,
// with its output and the logs of the session's servers. It returns false
// when one failed, and the session should end.
func (s *Session) Run(b Block) bool {
	s.t.Helper()
	steps, err := steps(b.Text)
	if err != nil {
		s.t.Errorf("%s: %v", b.Where(), err)
		return false
	}
	for _, st := range steps {
		where := fmt.Sprintf("%s, line %d of the block", b.Where(), st.line)
		if b.Line > 0 {
			where = fmt.Sprintf("%s:%d", b.File, b.Line+st.line)
		}
		cmd, err := fill(st.command, s.vals)
		if err != nil {
			s.t.Errorf("%s: %s\n%v", where, st.command, err)
			return false
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			out, errOut, rc, err := s.exec(cmd)
			if err != nil {
				s.t.Errorf("%s: %s\n%v\nstdout:\n%s\nstderr:\n%s%s", where, cmd, err, out, errOut, s.serverLogs())
				return false
			}
			s.t.Logf("%s: %s\n%s%s", where, cmd, out, errOut)
			if rc != 0 {
				s.t.Errorf("%s: %s\nexit status %d\nstdout:\n%s\nstderr:\n%s%s", where, cmd, rc, out, errOut, s.serverLogs())
				return false
			}
			if st.until != "" && !strings.Contains(out, st.until) {
				if time.Now().Before(deadline) {
					time.Sleep(200 * time.Millisecond)
					continue
				}
				s.t.Errorf("%s: %s\nthe output never contained %q (polled 30s); last:\n%s", where, cmd, st.until, out)
				return false
			}
			if st.want != "" {
				if st.pattern {
					vals, ok := matchPattern(st.want, out)
					if !ok {
						s.t.Errorf("%s: %s\nthe output does not match the one shown\nshown: %s\ngot:   %s", where, cmd, st.want, out)
						return false
					}
					for k, v := range vals {
						s.vals[k] = v
					}
				} else if !matchShown(st.want, out) {
					s.t.Errorf("%s: %s\nthe output is not the one shown\nshown: %s\ngot:   %s", where, cmd, st.want, out)
					return false
				}
			}
			break
		}
	}
	return true
}

// exec runs one command in the session and returns what it printed and its
// exit status.
func (s *Session) exec(cmd string) (stdout, stderr string, rc int, err error) {
	s.n++
	base := filepath.Join(s.dir, strconv.Itoa(s.n))
	script := fmt.Sprintf("{ %s\n} >%s 2>%s </dev/null; echo $? >%s && mv %s %s\n",
		cmd, shellQuote(base+".out"), shellQuote(base+".err"), shellQuote(base+".rc.tmp"),
		shellQuote(base+".rc.tmp"), shellQuote(base+".rc"))
	if _, err := io.WriteString(s.in, script); err != nil {
		return "", "", 0, fmt.Errorf("the session's shell is gone: %w", err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		b, err := os.ReadFile(base + ".rc")
		if err == nil {
			rc, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			o, _ := os.ReadFile(base + ".out")
			e, _ := os.ReadFile(base + ".err")
			return string(o), string(e), rc, nil
		}
		if s.bash.ProcessState != nil || time.Now().After(deadline) {
			o, _ := os.ReadFile(base + ".out")
			e, _ := os.ReadFile(base + ".err")
			return string(o), string(e), 0, fmt.Errorf("no exit status after 2 minutes")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type server struct {
	rec, kind, addr string
	pid             int
}

func (s *Session) servers() []server {
	recs, _ := filepath.Glob(filepath.Join(s.dir, "servers", "*"))
	var out []server
	for _, rec := range recs {
		if strings.Contains(filepath.Base(rec), ".log") || strings.HasSuffix(rec, ".exit") || strings.HasSuffix(rec, ".tmp") {
			continue
		}
		b, err := os.ReadFile(rec)
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) != 3 {
			continue
		}
		pid, _ := strconv.Atoi(f[0])
		out = append(out, server{rec: rec, pid: pid, kind: f[1], addr: f[2]})
	}
	return out
}

func (s *Session) serverLogs() string {
	var b strings.Builder
	for _, sv := range s.servers() {
		fmt.Fprintf(&b, "\nlog of %s on %s (pid %d), last lines:\n%s\n", sv.kind, sv.addr, sv.pid, tail(sv.rec+".log", 15))
	}
	return b.String()
}

// Close stops the session's servers (SIGTERM; each must exit 0 within 30s)
// and its shell.
func (s *Session) Close() {
	s.t.Helper()
	for _, sv := range s.servers() {
		if _, err := os.Stat(sv.rec + ".exit"); err != nil {
			_ = syscall.Kill(sv.pid, syscall.SIGTERM)
		}
	}
	for _, sv := range s.servers() {
		deadline := time.Now().Add(30 * time.Second)
		var code []byte
		for {
			b, err := os.ReadFile(sv.rec + ".exit")
			if err == nil {
				code = b
				break
			}
			if time.Now().After(deadline) {
				_ = syscall.Kill(sv.pid, syscall.SIGKILL)
				s.t.Errorf("%s on %s (pid %d) did not stop within 30s of SIGTERM:\n%s", sv.kind, sv.addr, sv.pid, tail(sv.rec+".log", 15))
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if code != nil && strings.TrimSpace(string(code)) != "0" {
			s.t.Errorf("%s on %s exited with %s after SIGTERM, not 0:\n%s", sv.kind, sv.addr, strings.TrimSpace(string(code)), tail(sv.rec+".log", 15))
		}
	}
	_ = s.in.Close()
	// Whatever an example started and left running (a command past its
	// time, a background job) is in the session's process group.
	_ = syscall.Kill(-s.bash.Process.Pid, syscall.SIGKILL)
	done := make(chan struct{})
	go func() { _ = s.bash.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = s.bash.Process.Kill()
		<-done
	}
}

// RunAll runs blocks, the ones of a session in one Session, sessions one
// after the other in the order their first block comes; a block that is not
// run is skipped.
func (w *World) RunAll(t *testing.T, blocks []Block) {
	t.Helper()
	type group struct {
		name   string
		blocks []Block
	}
	var groups []*group
	named := map[string]*group{}
	for _, b := range blocks {
		if !b.Runs() {
			continue
		}
		if b.Session == "" {
			groups = append(groups, &group{name: b.Where(), blocks: []Block{b}})
			continue
		}
		g := named[b.Session]
		if g == nil {
			g = &group{name: "session " + b.Session}
			named[b.Session] = g
			groups = append(groups, g)
		}
		g.blocks = append(g.blocks, b)
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			s := w.NewSession(t)
			defer s.Close()
			for _, b := range g.blocks {
				if !s.Run(b) {
					return
				}
			}
		})
	}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func canonicalJSON(s string) (string, error) {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return "", err
	}
	b, err := json.Marshal(v)
	return string(b), err
}
