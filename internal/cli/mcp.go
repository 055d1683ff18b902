package cli

import (
	"context"
	"os/signal"
	"syscall"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/tether-run/tether/internal/mcp"
	"github.com/tether-run/tether/internal/version"
)

// mcpCommand is `tether mcp`: an MCP server on stdin and stdout for one
// agent, calling the server at --server/TETHER_URL with --token/TETHER_TOKEN.
func (c *cli) mcpCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "mcp",
		Short: "Serve the Model Context Protocol on stdio, so that an agent uses Tether through tools",
		Long: `Serve the Model Context Protocol on stdin and stdout for one agent session.

The tools (claim_next, renew, progress, complete, fail, release, comment,
create_child, get_node, history, inbox, send_message) call the Tether server
at --server (TETHER_URL) with --token (TETHER_TOKEN), as that identity. A lease
that claim_next returns is renewed in the background until the agent calls
complete, fail or release, or the session ends (stdin closes).

An MCP client launches it, for example (Claude Code's .mcp.json):

  {"mcpServers": {"tether": {"command": "tether", "args": ["mcp"],
    "env": {"TETHER_URL": "http://127.0.0.1:36725", "TETHER_TOKEN": "<token>"}}}}`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			api, err := c.api()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return mcp.Serve(ctx, api, &sdk.StdioTransport{}, mcp.Options{Version: version.Get().Summary()})
		},
	}
}
