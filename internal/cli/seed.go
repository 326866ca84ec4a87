package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

func seedCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "seed",
		Short: "Seed sale inventory (SKUs) from flags or a YAML/CSV file",
		Example: `  seckill seed --name "Phone X" --price-cents 99900 --stock 10 --per-user-limit 1 \
      --starts-at 2026-11-11T00:00:00Z --ends-at 2026-11-11T01:00:00Z
  seckill seed --file skus.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return errors.New("seed: not available in this build")
		},
	}
	return cmd
}

func verifyCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:     "verify",
		Short:   "Check the sale invariants; exit 1 on a violation",
		Example: `  seckill verify --sku 42`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return errors.New("verify: not available in this build")
		},
	}
}
