package chaostest

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// seckillBin is the seckill binary the run starts, built by TestMain.
var seckillBin string

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "seckill-chaostest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaostest:", err)
		os.Exit(1)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		bin, err := build(dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "chaostest:", err)
			return 1
		}
		seckillBin = bin
		return m.Run()
	}()
	os.Exit(code)
}

// build compiles ./cmd/seckill of this module into dir, with the race
// detector when this test binary has it (or SECKILL_CHAOS_RACE says so), so
// that a data race in a server under faults fails the run too.
func build(dir string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "seckill")
	args := []string{"build", "-o", bin}
	if serverRace() {
		args = append(args, "-race")
	}
	cmd := exec.Command(goTool(), append(args, "./cmd/seckill")...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go %v: %w\n%s", args, err, out)
	}
	return bin, nil
}

// serverRace reports whether the seckill processes run with the race
// detector: SECKILL_CHAOS_RACE=1 or 0 decides, otherwise they do when the
// test binary does.
func serverRace() bool {
	switch os.Getenv("SECKILL_CHAOS_RACE") {
	case "1", "true":
		return true
	case "0", "false":
		return false
	}
	return raceEnabled
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the test directory")
		}
		dir = parent
	}
}

// goTool is the go command that runs the tests: the one on PATH, else the
// one GOROOT names.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	if root := os.Getenv("GOROOT"); root != "" {
		return filepath.Join(root, "bin", "go")
	}
	return "go" // not found: running it says so
}
