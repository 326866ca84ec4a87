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
			return e.withApp(cmd.Context(), true, migrateWork, func(a *app.App) error {
				fmt.Fprintf(e.stdout, "migrations up to date (%s)\n", a.Dialect)
				return nil
			})
		},
	}
}
