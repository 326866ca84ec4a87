package testutil

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// MainWithBinary is the body of a TestMain whose tests run a binary of this
// module as a separate process. Unless the run is -short, it builds the
// main package pkg (such as "./cmd/seckill", relative to the module root)
// once into a temporary directory, with the race detector when race is
// true, stores the binary's path in *bin, runs the tests and removes the
// directory. It returns the exit code for os.Exit; a failed build prints
// why, prefixed with name, and returns 1.
func MainWithBinary(m *testing.M, name, pkg string, race bool, bin *string) int {
	flag.Parse()
	if testing.Short() {
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "seckill-"+name+"-")
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	path, err := Build(dir, pkg, race)
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		return 1
	}
	*bin = path
	return m.Run()
}

// Build compiles the main package pkg of this module into dir, with -race
// when race is true, and returns the binary's path.
func Build(dir, pkg string, race bool) (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, filepath.Base(pkg))
	args := []string{"build", "-o", bin}
	if race {
		args = append(args, "-race")
	}
	args = append(args, pkg)
	cmd := exec.Command(GoTool(), args...) //nolint:gosec // the go command building this module
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go %v: %w\n%s", args, err, out)
	}
	return bin, nil
}

// ModuleRoot is the nearest directory at or above the working directory
// that holds a go.mod: the module root for a test.
func ModuleRoot() (string, error) {
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

// GoTool is the go command that runs the tests: the one on PATH, else the
// one GOROOT names.
func GoTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	if root := os.Getenv("GOROOT"); root != "" {
		return filepath.Join(root, "bin", "go")
	}
	return "go" // not found: running it says so
}
