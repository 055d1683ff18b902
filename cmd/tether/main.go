// Command tether is the Tether server and its operator tools.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	root := &cobra.Command{
		Use:           "tether",
		Short:         "Tether coordinates work among fleets of AI agents and background workers",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(serveCommand())
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "tether:", err)
		os.Exit(1)
	}
}
