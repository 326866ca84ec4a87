package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"syscall"

	"github.com/seckill/seckill/internal/cli"
)

// runSeckill is `loadbench seckill <args>`: the seckill command in this
// process, writing a CPU profile to $LOADBENCH_CPUPROFILE while it runs and
// an allocation profile to that path plus ".allocs" at exit (the -profile
// flag starts the servers this way).
func runSeckill(args []string) {
	if path := os.Getenv("LOADBENCH_CPUPROFILE"); path != "" {
		stop, err := startProfiles(filepath.Clean(path))
		if err != nil {
			fmt.Fprintln(os.Stderr, "loadbench: profile:", err)
		} else {
			defer func() {
				if err := stop(); err != nil {
					fmt.Fprintln(os.Stderr, "loadbench: profile:", err)
				}
			}()
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := cli.Run(ctx, args, os.Environ(), os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "seckill:", err)
	}
}

// startProfiles starts the CPU profile into path; the function it returns
// stops it and writes the allocation profile to path plus ".allocs".
func startProfiles(path string) (stop func() error, err error) {
	f, err := os.Create(path) //nolint:gosec // the operator's -profile directory, which loadbench passes to its own child
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("cpu profile %s: %w", path, err)
		}
		a, err := os.Create(path + ".allocs") //nolint:gosec // as above
		if err != nil {
			return err
		}
		if err := pprof.Lookup("allocs").WriteTo(a, 0); err != nil {
			_ = a.Close()
			return fmt.Errorf("allocation profile %s.allocs: %w", path, err)
		}
		return a.Close()
	}, nil
}
