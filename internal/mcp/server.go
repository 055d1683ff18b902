package mcp

import (
	"context"
	"log/slog"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tether-run/tether/client"
)

// Options configure the MCP servers of both transports.
type Options struct {
	// Keep are options for the keeper of every lease a session holds, after
	// the defaults (renew at a third of the TTL); tests shorten the interval.
	// A KeepOnRenew among them is overridden: use OnRenew.
	Keep []client.KeepOption
	// OnRenew, when set, is called after every renewal a keeper makes, from
	// the keeper's goroutine; it must return quickly.
	OnRenew func(nodeID string, r client.RenewResponse)
	// Logger receives the SDK's own log lines (none when nil).
	Logger *slog.Logger
	// Version is reported to clients as the server's version.
	Version string
}

const instructions = "Tether is a work queue for agents. Call claim_next on a queue to get a node and its lease; " +
	"this server keeps the lease alive while you work. Report with progress, and end every claim with complete, " +
	"fail or release. Read tether://skill.md for the whole protocol."

// newServer is the MCP server of one session: its tools and resources call
// sess's client.
func newServer(sess *session, opts Options) *sdk.Server {
	version := opts.Version
	if version == "" {
		version = "dev"
	}
	srv := sdk.NewServer(&sdk.Implementation{Name: "tether", Title: "Tether", Version: version}, &sdk.ServerOptions{
		Instructions: instructions,
		Logger:       opts.Logger,
	})
	sess.addTools(srv)
	sess.addResources(srv)
	srv.AddReceivingMiddleware(problemErrors)
	return srv
}

// problemErrors gives the tool errors the SDK makes itself (arguments that
// do not match the input schema) the shape of every other tool error: a
// bad_request problem with a hint.
func problemErrors(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		res, err := next(ctx, method, req)
		if tr, ok := res.(*sdk.CallToolResult); ok && err == nil && tr.IsError && tr.StructuredContent == nil {
			var detail strings.Builder
			for _, c := range tr.Content {
				if t, ok := c.(*sdk.TextContent); ok {
					detail.WriteString(t.Text)
				}
			}
			return badInput("", detail.String()), nil
		}
		return res, err
	}
}

// Serve runs one MCP session over t (stdio, for `tether mcp`) until the
// client hangs up or ctx ends, its tools calling the Tether API through c
// (which carries the caller's token). The leases it kept are then left to
// lapse at their expiry.
func Serve(ctx context.Context, c *client.ClientWithResponses, t sdk.Transport, opts Options) error {
	sess := newSession(opts)
	sess.api = c
	defer sess.close()
	return newServer(sess, opts).Run(ctx, t)
}
