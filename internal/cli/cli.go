// Package cli is the seckill command line: serve, worker, migrate, seed,
// verify and version, built with cobra. Run is the whole program; main only
// sets up signals and exits with ExitCode(err).
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/seckill/seckill/internal/config"
)

// Exit codes.
const (
	ExitOK        = 0
	ExitFailure   = 1 // a runtime failure, or verify found a violation
	ExitBadConfig = 2 // bad configuration or command-line usage
)

// usageError marks a mistake on the command line.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// ExitCode maps the error Run returned to the process exit code.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ce *config.Error
	var ue usageError
	if errors.As(err, &ce) || errors.As(err, &ue) {
		return ExitBadConfig
	}
	return ExitFailure
}

// env is what every command needs from the process.
type env struct {
	getenv         func(string) string
	stdout, stderr io.Writer
	configPath     string
}

// Run executes the command line args (without the program name).
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	e := &env{getenv: getenv, stdout: stdout, stderr: stderr}
	root := &cobra.Command{
		Use:   "seckill",
		Short: "Flash-sale backend: never oversold, no accepted order lost",
		Long: `seckill serves flash sales: shoppers buy through a REST API, a per-SKU Redis
lock and Lua script take stock, a Redis ZSET queue carries each accepted order,
and workers drain the queue into MySQL, which refuses to oversell on its own.

With nothing configured it runs on embedded backends (in-process Redis and
SQLite). Configure real ones with SECKILL_REDIS_ADDRS and SECKILL_MYSQL_DSN
or a --config file; see configs/config.yaml for every key.`,
		Example: `  seckill serve                       # embedded mode, http://localhost:8080
  SECKILL_REDIS_ADDRS=127.0.0.1:6379 \
  SECKILL_MYSQL_DSN='root:@tcp(127.0.0.1:3306)/seckill' seckill serve
  seckill serve --config /etc/seckill.yaml`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w\nsee '%s --help'", err, c.CommandPath())}
	})
	root.PersistentFlags().StringVarP(&e.configPath, "config", "c", "", "YAML file overriding configs/config.yaml (the environment overrides both)")
	root.AddCommand(
		serveCmd(e),
		workerCmd(e),
		migrateCmd(e),
		seedCmd(e),
		verifyCmd(e),
		queueCmd(e),
		versionCmd(e),
	)
	cmd, err := root.ExecuteContextC(ctx)
	if err != nil && cmd != nil && isUsage(err) {
		return usageError{err}
	}
	return err
}

// isUsage reports cobra's own argument errors (unknown command, bad args).
func isUsage(err error) bool {
	var ue usageError
	if errors.As(err, &ue) {
		return false
	}
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand", "accepts ", "requires ", "invalid argument"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// load reads the configuration and builds the logger.
func (e *env) load() (*config.Config, *slog.Logger, error) {
	cfg, err := config.Load(e.configPath, e.getenv)
	if err != nil {
		return nil, nil, err
	}
	return cfg, newLogger(cfg.Log, e.stderr), nil
}

func newLogger(c config.Log, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.Level))
	opts := &slog.HandlerOptions{Level: level}
	if w == nil {
		w = os.Stderr
	}
	if c.Format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}
