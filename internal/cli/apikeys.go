package cli

// tether token create|ls|revoke: the tenant's API keys (POST/GET /v1/tokens,
// DELETE /v1/tokens/{id}); admin only on the server's side.

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/tenancy"
)

func (c *cli) tokenCreateCommand() *cobra.Command {
	var sub, name string
	var roles []string
	cmd := &cobra.Command{
		Use:   "create --sub SUBJECT [--roles r1,r2] [--name NAME]",
		Short: "Make an API key of this tenant (admin); its secret is printed once",
		Long: `Make an API key: a bearer token for --sub in the caller's tenant that the
server looks up on every request (only its hash is stored), revoked at once by
tether token revoke. The secret is printed alone (table output) or as "token"
(-o json), and never again.`,
		Example: `  export TETHER_TOKEN=$(tether token create --sub ci-runner --roles worker --name "CI")`,
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if sub == "" {
				return usageErrorf("--sub is required")
			}
			if len(roles) == 0 {
				roles = []string{"worker"}
			}
			req := client.TokenCreate{Sub: sub, Name: ifSet(cmd, "name", name)}
			for _, r := range roles {
				role, ok := tenancy.ParseRole(r)
				if !ok {
					return usageErrorf("--roles: %q is not reader, worker, dispatcher or admin", r)
				}
				req.Roles = append(req.Roles, client.Role(role.String()))
			}
			res, err := ask(c, func(api *apiClient) (*client.CreateTokenResponse, error) {
				return api.CreateTokenWithResponse(cmd.Context(), req)
			})
			if err != nil {
				return err
			}
			if c.output == "table" {
				_, err := fmt.Fprintln(cmd.OutOrStdout(), res.JSON201.Token)
				return err
			}
			return c.emit(cmd.OutOrStdout(), res.Body, nil)
		},
	}
	f := cmd.Flags()
	f.StringVar(&sub, "sub", "", "the identity the key authenticates as (required)")
	f.StringSliceVar(&roles, "roles", nil, "reader, worker, dispatcher or admin (comma separated; default worker)")
	f.StringVar(&name, "name", "", "a label for people")
	return cmd
}

func (c *cli) tokenListCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List the tenant's API keys (admin): id, subject, roles, name (never the secret)",
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var all []client.Token
			var cursor *string
			for {
				res, err := ask(c, func(api *apiClient) (*client.ListTokensResponse, error) {
					return api.ListTokensWithResponse(cmd.Context(), &client.ListTokensParams{Cursor: cursor})
				})
				if err != nil {
					return err
				}
				if c.json() {
					// One page per document would not be JSON; -o json prints the first
					// page as the API answers it, with its next_cursor.
					return c.emit(cmd.OutOrStdout(), res.Body, nil)
				}
				all = append(all, res.JSON200.Items...)
				if res.JSON200.NextCursor == nil {
					break
				}
				cursor = res.JSON200.NextCursor
			}
			return c.emit(cmd.OutOrStdout(), nil, func(w io.Writer) {
				fmt.Fprintln(w, "ID\tSUB\tROLES\tNAME\tCREATED")
				for _, k := range all {
					roles := make([]string, len(k.Roles))
					for i, r := range k.Roles {
						roles[i] = string(r)
					}
					name := "-"
					if k.Name != nil {
						name = *k.Name
					}
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", k.ID, k.Sub, strings.Join(roles, ","), name, relative(k.CreatedAt))
				}
			})
		},
	}
	return cmd
}

func (c *cli) tokenRevokeCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "revoke <id>",
		Short: "Revoke an API key at once (admin); its id is in tether token ls",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			_, err := ask(c, func(api *apiClient) (*client.DeleteTokenResponse, error) {
				return api.DeleteTokenWithResponse(cmd.Context(), a[0])
			})
			if err != nil {
				return err
			}
			if c.json() {
				return nil
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "revoked %s\n", a[0])
			return err
		},
	}
}
