package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
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
		f, err := os.Create(path)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer func() {
				pprof.StopCPUProfile()
				f.Close()
			}()
		}
		// And what was allocated where, written at exit.
		defer func() {
			if f, err := os.Create(path + ".allocs"); err == nil {
				_ = pprof.Lookup("allocs").WriteTo(f, 0)
				f.Close()
			}
		}()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := cli.Run(ctx, args, os.Environ(), os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "seckill:", err)
	}
}
