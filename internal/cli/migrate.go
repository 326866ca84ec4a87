package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/seckill/seckill/internal/app"
)

func migrateCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Apply pending database migrations",
		Long: `migrate applies the embedded SQL migrations (migrations/mysql) to the
configured MySQL database and exits. serve and worker do the same at start
unless told not to.`,
		Example: `  SECKILL_MYSQL_DSN='root:@tcp(127.0.0.1:3306)/seckill' seckill migrate`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// The SQL store alone: no Redis, no API.
			cfg, log, err := e.load()
			if err != nil {
				return err
			}
			if err := refusePrivate(cfg, migrateWork); err != nil {
				return err
			}
			dialect, err := app.MigrateSQL(cmd.Context(), cfg, log)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "migrations up to date (%s)\n", dialect)
			return nil
		},
	}
}
