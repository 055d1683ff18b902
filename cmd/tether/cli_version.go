package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tether-run/tether/internal/version"
)

// versionCommand prints which build this binary is (the server says the same
// in GET /health and the tether_build_info metric).
func versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of this binary (also --version)",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := version.Get()
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "tether %s\n", info.Version)
			if info.Revision != "" {
				fmt.Fprintf(w, "revision: %s\n", info.Revision)
			}
			_, err := fmt.Fprintf(w, "go: %s\n", info.GoVersion)
			return err
		},
	}
}
