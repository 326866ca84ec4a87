package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/seckill/seckill/internal/buildinfo"
)

func versionCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the version and the licence",
		Example: "  seckill version",
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintf(e.stdout, "seckill %s\n%s\n", buildinfo.String(), buildinfo.LicenseLine)
			return err
		},
	}
}
