package cli

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/seckill/seckill/internal/app"
)

func serveCmd(e *env) *cobra.Command {
	var apiOnly, workersOnly, noMigrate bool
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the HTTP API and the background workers",
		Long: `serve runs the shopper and admin API and the workers that drain accepted
orders into MySQL and expire unpaid ones. It applies pending migrations at
start unless --no-migrate is given or mysql.migrate_on_start is false.

SIGINT or SIGTERM shuts down in order: stop accepting HTTP and finish
in-flight requests, stop the workers (in-flight batches finish or go back to
the queue), then close Redis and SQL.`,
		Example: `  seckill serve                      # embedded mode on 127.0.0.1:8080
  seckill serve --api-only           # scale the API separately from the drain
  SECKILL_HTTP_ADDR=127.0.0.1:9000 seckill serve`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if apiOnly && workersOnly {
				return usageError{errors.New("--api-only and --workers-only exclude each other")}
			}
			return e.run(cmd, app.RunOptions{API: !workersOnly, Workers: !apiOnly, Migrate: !noMigrate})
		},
	}
	cmd.Flags().BoolVar(&apiOnly, "api-only", false, "serve HTTP only, run no workers")
	cmd.Flags().BoolVar(&workersOnly, "workers-only", false, "run workers only, no HTTP API (same as the worker command)")
	cmd.Flags().BoolVar(&noMigrate, "no-migrate", false, "do not apply migrations at start")
	return cmd
}

func workerCmd(e *env) *cobra.Command {
	var noMigrate bool
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run only the background workers (drain and payment expiry)",
		Long: `worker runs the order workers without the HTTP API, to scale the drain into
MySQL separately from the API. Any number of worker processes can run: each
claims its own batches from the queues.`,
		Example: `  SECKILL_REDIS_ADDRS=127.0.0.1:6379 \
  SECKILL_MYSQL_DSN='root:@tcp(127.0.0.1:3306)/seckill' seckill worker`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.run(cmd, app.RunOptions{Workers: true, Migrate: !noMigrate})
		},
	}
	cmd.Flags().BoolVar(&noMigrate, "no-migrate", false, "do not apply migrations at start")
	return cmd
}

func (e *env) run(cmd *cobra.Command, opts app.RunOptions) error {
	cfg, log, err := e.load()
	if err != nil {
		return err
	}
	if opts.API {
		if _, err := cfg.ShopperAuth(); err != nil {
			return err
		}
		if _, err := cfg.PaymentConfirmation(); err != nil {
			return err
		}
	} else if err := refusePrivate(cfg, workerWork); err != nil {
		// Workers alone on stores of their own would drain nothing, ever.
		return err
	}
	ctx := cmd.Context()
	a, err := app.Open(ctx, cfg, log, opts.Migrate && cfg.MySQL.MigrateOnStart)
	if err != nil {
		return err
	}
	defer a.Close()
	return a.Run(ctx, opts)
}
