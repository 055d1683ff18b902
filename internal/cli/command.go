package cli

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/tether-run/tether/internal/envflag"
	"github.com/tether-run/tether/internal/version"
)

// NewRoot is the tether command with every command of the CLI: the client
// commands, which share --server, --token and -o, and those that do not
// call a server the root's way (health, work, check, restore, migrate). Each of
// others (serve) is added as one of the latter.
func NewRoot(others ...*cobra.Command) *cobra.Command {
	root, _ := newRoot(others...)
	return root
}

func newRoot(others ...*cobra.Command) (*cobra.Command, *cli) {
	root := &cobra.Command{
		Use:           "tether",
		Short:         "Tether coordinates work among fleets of AI agents and background workers",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.Get().Summary(), // --version
	}
	root.SetVersionTemplate("tether {{.Version}}\n")
	c := newCLI(root) // --server, --token, -o for the client commands
	for _, cmd := range others {
		root.AddCommand(notAClient(cmd, clientFlags...))
	}
	root.AddCommand(notAClient(healthCommand(), clientFlags...), notAClient(workCommand(), "output"),
		notAClient(checkCommand(), clientFlags...), notAClient(restoreCommand(), clientFlags...),
		notAClient(migrateCommand(), clientFlags...))
	root.AddCommand(c.versionCommand())
	root.AddCommand(c.nodesCommand(), c.edgesCommand(), c.queuesCommand(), c.limitsCommand(), c.workersCommand())
	root.AddCommand(c.leaseCommands()...)
	root.AddCommand(c.nodeVerbCommands()...)
	root.AddCommand(c.leasesCommand(), c.historyCommand(), c.eventsCommand())
	root.AddCommand(c.tokenCommand(), c.tenantCommand(), c.backupCommand())
	root.AddCommand(c.messageCommands()...)
	root.AddCommand(c.blobCommand(), c.scheduleCommand())
	root.AddCommand(c.mcpCommand())
	return root, c
}

// Main runs the tether command line (os.Args) with others beside the CLI's
// commands, as NewRoot does, and returns the exit code: 0, 1 for an error
// (printed on stderr; as a problem document with -o json), 2 for a usage
// error.
func Main(others ...*cobra.Command) int {
	root, c := newRoot(others...)
	if err := root.Execute(); err != nil {
		printError(os.Stderr, err, c.output == "json")
		return exitCode(err)
	}
	return 0
}

// ServerURL is the server the client commands call without --server:
// TETHER_URL, or the local default.
func ServerURL() string { return envflag.String("TETHER_URL", defaultServer) }
