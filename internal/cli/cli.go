// Package cli is the seckill command line: serve, worker, migrate, seed,
// verify, queue, token and version, built with cobra. Run is the whole
// program; main only sets up signals and exits with ExitCode(err).
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

	"github.com/seckill/seckill/internal/app"
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
	environ        []string
	stdout, stderr io.Writer
	configPath     string
}

// Run executes the command line args (without the program name) in the
// environment environ ("NAME=value" entries, as os.Environ returns them).
func Run(ctx context.Context, args []string, environ []string, stdout, stderr io.Writer) error {
	e := &env{environ: environ, stdout: stdout, stderr: stderr}
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
		tokenCmd(e),
		versionCmd(e),
	)
	typedArgs(root)
	_, err := root.ExecuteContextC(ctx)
	return err
}

// typedArgs makes the positional-argument check of cmd and every command
// below it return a usageError, so that no caller reads cobra's messages. A
// group of commands (seckill, seckill queue) alone prints its help; a word
// after it that names none of its commands is a usage error.
func typedArgs(cmd *cobra.Command) {
	if cmd.HasSubCommands() && !cmd.Runnable() {
		cmd.Args = cobra.ArbitraryArgs
		cmd.RunE = func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{fmt.Errorf("unknown command %q\nsee '%s --help'", args[0], c.CommandPath())}
			}
			return c.Help()
		}
	}
	if check := cmd.Args; check != nil {
		cmd.Args = func(c *cobra.Command, args []string) error {
			if err := check(c, args); err != nil {
				return usageError{err}
			}
			return nil
		}
	}
	for _, sub := range cmd.Commands() {
		typedArgs(sub)
	}
}

// load reads the configuration and builds the logger, which warns of
// SECKILL_* variables that set no key (a typo is otherwise silently ignored).
func (e *env) load() (*config.Config, *slog.Logger, error) {
	cfg, err := config.Load(e.configPath, e.getenv)
	if err != nil {
		return nil, nil, err
	}
	log := newLogger(cfg.Log, e.stderr)
	for _, name := range config.UnknownEnv(e.environ) {
		log.Warn("unknown environment variable ignored: it sets no configuration key (see configs/config.yaml)", "name", name)
	}
	return cfg, log, nil
}

// withApp loads the configuration, opens the application (applying pending
// migrations when migrate is set), runs f with it and closes it.
func (e *env) withApp(ctx context.Context, migrate bool, f func(a *app.App) error) error {
	cfg, log, err := e.load()
	if err != nil {
		return err
	}
	a, err := app.Open(ctx, cfg, log, migrate)
	if err != nil {
		return err
	}
	defer a.Close()
	return f(a)
}

// getenv looks name up in the environment; the last entry wins, as in the
// process environment.
func (e *env) getenv(name string) string {
	val := ""
	for _, kv := range e.environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			val = v
		}
	}
	return val
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
