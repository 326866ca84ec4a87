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
	ExitUnchecked = 3 // verify found no violation but could not run every check
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
	var fe *config.FileError
	var ue usageError
	if errors.As(err, &ce) || errors.As(err, &fe) || errors.As(err, &ue) {
		return ExitBadConfig
	}
	if errors.Is(err, errUnchecked) && !errors.Is(err, errViolation) {
		return ExitUnchecked
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
	root, _ := newRoot(e)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	_, err := root.ExecuteContextC(ctx)
	return err
}

// sharedStores opens the examples of the commands that act on the data of
// the servers (seed, verify, queue): they run with the Redis and MySQL the
// servers use, which in embedded mode they refuse to do without.
const sharedStores = "  export SECKILL_REDIS_ADDRS=127.0.0.1:6379 SECKILL_MYSQL_DSN='root:@tcp(127.0.0.1:3306)/seckill'   # the servers' Redis and MySQL\n"

// newRoot builds the command tree on e, and returns it with every command
// in the order it is declared (the root first, a command before its own).
func newRoot(e *env) (*cobra.Command, []*cobra.Command) {
	root := &cobra.Command{
		Use:   "seckill",
		Short: "Flash-sale backend: never oversold, no accepted order lost",
		Long: `seckill serves flash sales: shoppers buy through a REST API, a per-SKU Redis
lock and Lua script take stock, a Redis ZSET queue carries each accepted order,
and workers drain the queue into MySQL, which refuses to oversell on its own.

With nothing configured it runs on embedded backends (in-process Redis and
SQLite), whose data lives in the serving process only. Configure real ones
with SECKILL_REDIS_ADDRS and SECKILL_MYSQL_DSN (and SECKILL_AUTH_MODE, how
shoppers are identified, and SECKILL_PAYMENT_MODE, who confirms a payment)
or a --config file; see configs/config.yaml for every key and
configs/production.example.yaml for a production setup.

worker, migrate, seed, verify and queue act on the Redis and MySQL the
servers use. With the embedded backends they refuse to run (exit 2), since
stores of their own would be seen by nobody; the admin API of the running
server does the same work (seckill <command> names the call).`,
		Example: `  seckill serve                       # embedded mode, http://localhost:8080
  SECKILL_REDIS_ADDRS=127.0.0.1:6379 SECKILL_MYSQL_DSN='root:@tcp(127.0.0.1:3306)/seckill' \
  SECKILL_AUTH_MODE=header SECKILL_PAYMENT_MODE=trusted seckill serve
  seckill serve --config configs/config.yaml   # a YAML file of keys; this one holds them all`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w\nsee '%s --help'", err, c.CommandPath())}
	})
	root.PersistentFlags().StringVarP(&e.configPath, "config", "c", "", "YAML file overriding configs/config.yaml (the environment overrides both)")
	seed, verify, queue := seedCmd(e), verifyCmd(e), queueCmd(e)
	subs := []*cobra.Command{serveCmd(e), workerCmd(e), migrateCmd(e), seed, verify, queue, tokenCmd(e), versionCmd(e)}
	root.AddCommand(subs...)
	all := []*cobra.Command{root}
	for _, c := range subs {
		all = append(all, c)
		all = append(all, c.Commands()...)
	}
	for _, c := range append([]*cobra.Command{seed, verify, queue}, queue.Commands()...) {
		c.Example = sharedStores + c.Example
	}
	typedArgs(root)
	return root, all
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

// withApp loads the configuration, refuses stores that only this process
// would see (see refusePrivate), opens the application, runs f with it and
// closes it.
func (e *env) withApp(ctx context.Context, w work, f func(a *app.App) error) error {
	cfg, log, err := e.load()
	if err != nil {
		return err
	}
	if err := refusePrivate(cfg, w); err != nil {
		return err
	}
	a, err := app.Open(ctx, cfg, log, false)
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
