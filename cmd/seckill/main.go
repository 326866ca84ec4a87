// Command seckill is the flash-sale backend: `seckill serve` runs the API and
// the workers; `seckill --help` lists every command.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/seckill/seckill/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := cli.Run(ctx, os.Args[1:], os.Environ(), os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "seckill:", err)
	}
	os.Exit(cli.ExitCode(err))
}
