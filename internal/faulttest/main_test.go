package faulttest

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// seckillBin is the seckill binary the scenarios run, built by TestMain.
var seckillBin string

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "seckill-faulttest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "faulttest:", err)
		os.Exit(1)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		bin, err := build(dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "faulttest:", err)
			return 1
		}
		seckillBin = bin
		return m.Run()
	}()
	os.Exit(code)
}

// build compiles ./cmd/seckill of this module into dir.
func build(dir string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "seckill")
	cmd := exec.Command(goTool(), "build", "-o", bin, "./cmd/seckill")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/seckill: %w\n%s", err, out)
	}
	return bin, nil
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
