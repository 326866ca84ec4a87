package lock_test

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"strings"
	"testing"
)

// The tests and examples find Redis through these variables (see
// lock/internal/locktest): only the standalone server is required.
const (
	envRedis   = "SECKILL_TEST_REDIS_ADDR"
	envRedlock = "SECKILL_TEST_REDLOCK_ADDRS"
)

// TestMain leaves out the examples whose Redis is not named in the
// environment, saying so, since an Example cannot skip itself; with CI=true
// a missing variable fails the run instead. An explicit -run is obeyed.
func TestMain(m *testing.M) {
	flag.Parse()
	run := flag.Lookup("test.run")
	if run.Value.String() == "" {
		names, err := exampleNames()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		var keep, left []string
		for _, n := range names {
			env := envRedis
			if strings.Contains(n, "Redlock") {
				env = envRedlock
			}
			if os.Getenv(env) == "" {
				left = append(left, n+" ("+env+" is not set)")
			} else {
				keep = append(keep, n)
			}
		}
		if len(left) > 0 {
			if os.Getenv("CI") == "true" {
				fmt.Fprintln(os.Stderr, "required service missing (CI=true):", strings.Join(left, ", "))
				os.Exit(1)
			}
			fmt.Println("lock: skipping examples:", strings.Join(left, ", "))
			pattern := "^(Test|Fuzz)"
			if len(keep) > 0 {
				pattern += "|^(" + strings.Join(keep, "|") + ")$"
			}
			_ = run.Value.Set(pattern)
		}
	}
	os.Exit(m.Run())
}

// exampleNames lists the Example functions of example_test.go.
func exampleNames() ([]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), "example_test.go", nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && regexp.MustCompile(`^Example`).MatchString(fd.Name.Name) {
			names = append(names, fd.Name.Name)
		}
	}
	return names, nil
}
