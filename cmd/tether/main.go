// Command tether is the Tether server and its operator tools.
package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/tether-run/tether/internal/version"
)

func main() {
	root := &cobra.Command{
		Use:           "tether",
		Short:         "Tether coordinates work among fleets of AI agents and background workers",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.String(), // --version
	}
	root.SetVersionTemplate("tether {{.Version}}\n")
	root.AddCommand(serveCommand(), versionCommand(), healthCommand())
	root.AddCommand(workCommand(), checkCommand(), restoreCommand())
	cli := newCLI(root) // --server, --token, -o for the client commands
	root.AddCommand(cli.nodesCommand(), cli.edgesCommand(), cli.queuesCommand(), cli.workersCommand())
	root.AddCommand(cli.leaseCommands()...)
	root.AddCommand(cli.leasesCommand(), cli.historyCommand(), cli.eventsCommand())
	root.AddCommand(cli.tokenCommand(), cli.tenantCommand(), cli.backupCommand())
	root.AddCommand(cli.messageCommands()...)
	root.AddCommand(cli.blobCommand(), cli.scheduleCommand())
	root.AddCommand(cli.mcpCommand())
	if err := root.Execute(); err != nil {
		printError(os.Stderr, err, cli.output == "json")
		os.Exit(exitCode(err)) // 2 for a usage error
	}
}
