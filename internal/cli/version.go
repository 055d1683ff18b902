package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tether-run/tether/internal/version"
)

// versionJSON is `tether version -o json`: the fields of GET /health that
// name the build, and the Go toolchain.
type versionJSON struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"go"`
}

// versionCommand prints which build this binary is (the server says the same
// in GET /health, its start log and the tether_build_info metric).
func (c *cli) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version and commit of this binary (also --version)",
		Long: `Print the version and commit of this binary: the module version (a tag, a Go
pseudo-version, or dev for a build from a source tree) and the VCS commit it
was built from ("modified" when the tree had uncommitted changes). make build,
make install and make run stamp the commit; a plain go run cannot know it.
With -o json, the same as an object; with -o id, the version alone.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := c.checkOutput(); err != nil {
				return err
			}
			info := version.Get()
			w := cmd.OutOrStdout()
			switch c.output {
			case "json":
				b, err := json.Marshal(versionJSON{Version: info.Version, Commit: info.Commit, Modified: info.Modified, GoVersion: info.GoVersion})
				if err != nil {
					return err
				}
				return writeJSON(w, b)
			case "id":
				_, err := fmt.Fprintln(w, info.Version)
				return err
			}
			commit := info.Commit
			switch {
			case commit == "":
				commit = "unknown (built without VCS information: use make build or make install)"
			case info.Modified:
				commit += " (modified)"
			}
			_, err := fmt.Fprintf(w, "tether %s\ncommit: %s\ngo: %s\n", info.Version, commit, info.GoVersion)
			return err
		},
	}
}
