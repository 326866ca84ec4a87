package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/seckill/seckill/internal/buildinfo"
)

func versionCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the version",
		Example: "  seckill version",
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintln(e.stdout, "seckill", buildinfo.String())
			return err
		},
	}
}
