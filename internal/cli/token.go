package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/spf13/cobra"

	"github.com/tether-run/tether/internal/envflag"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/tenancy"
)

func (c *cli) tokenCommand() *cobra.Command {
	return groupCommand("token", "Make tokens: JWTs (mint) and API keys (create, ls, revoke)",
		c.tokenMintCommand(), c.tokenCreateCommand(), c.tokenListCommand(), c.tokenRevokeCommand())
}

// tenantID is the tenant id a token carries: its `tid` claim.
var tenantID = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

func (c *cli) tokenMintCommand() *cobra.Command {
	var sub, tid, secret, issuer, audience string
	var roles []string
	var ttl time.Duration
	cmd := &cobra.Command{
		Use:   "mint --sub SUBJECT --tenant TENANT [--roles r1,r2] [--ttl 24h]",
		Short: "Sign an HS256 JWT with the server's secret (no server is called)",
		Long: `Sign an HS256 JWT with the server's secret: --secret, or the first of the
comma separated TETHER_JWT_SECRET, which the server verifies with, or else the
secret in the file TETHER_SECRET_FILE names (tether serve --dev prints that
export line, for minting from any directory), or else the secret a dev server
keeps in its data directory (dev-secret in TETHER_DATA_DIR, default ./data),
so it works beside a dev server. Claims: sub,
tid (the tenant), roles (default, when not given: worker), iat, exp, and iss /
aud from --issuer / --audience (TETHER_JWT_ISSUER / TETHER_JWT_AUDIENCE) when
set. The token alone is printed, for export TETHER_TOKEN=$(tether token mint ...).`,
		Example: `  tether token mint --sub alice --tenant acme --roles worker --ttl 24h`,
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := c.checkOutput(); err != nil {
				return err
			}
			claims, err := tokenClaims(sub, tid, roles, ttl, issuer, audience)
			if err != nil {
				return err
			}
			if secret == "" {
				if secrets := envflag.List("TETHER_JWT_SECRET"); len(secrets) > 0 {
					secret = secrets[0]
				}
			}
			if secret == "" {
				if secret, err = secretFromFile(); err != nil {
					return err
				}
			}
			if secret == "" {
				secret = devSecretNearby()
			}
			if secret == "" {
				return usageErrorf("no secret: set --secret, TETHER_JWT_SECRET or TETHER_SECRET_FILE (the export line tether serve --dev printed), or run beside a dev server: found no %s", devSecretPath())
			}
			tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(secret))
			if err != nil {
				return fmt.Errorf("error signing the token: %w", err)
			}
			if !c.json() {
				_, err := fmt.Fprintln(cmd.OutOrStdout(), tok)
				return err
			}
			claims["token"] = tok
			claims["expires_at"] = stamp(time.Unix(claims["exp"].(int64), 0))
			b, err := json.Marshal(claims)
			if err != nil {
				return err
			}
			return writeJSON(cmd.OutOrStdout(), b)
		},
	}
	f := cmd.Flags()
	f.StringVar(&sub, "sub", "", "the identity (required)")
	f.StringVar(&tid, "tenant", "", "the tenant (required)")
	f.StringSliceVar(&roles, "roles", nil, "reader, worker, dispatcher or admin (comma separated; default worker)")
	f.DurationVar(&ttl, "ttl", 24*time.Hour, "how long it is valid")
	f.StringVar(&secret, "secret", "", "the HS256 secret (default: the first of TETHER_JWT_SECRET, else the file TETHER_SECRET_FILE, else a dev server's data/dev-secret here)")
	f.StringVar(&issuer, "issuer", os.Getenv("TETHER_JWT_ISSUER"), "the iss claim (TETHER_JWT_ISSUER)")
	f.StringVar(&audience, "audience", os.Getenv("TETHER_JWT_AUDIENCE"), "the aud claim (TETHER_JWT_AUDIENCE)")
	return cmd
}

// tokenClaims checks the flags of `token mint` and makes its claims.
func tokenClaims(sub, tid string, roles []string, ttl time.Duration, issuer, audience string) (jwt.MapClaims, error) {
	switch {
	case sub == "":
		return nil, usageErrorf("--sub is required")
	case !graphstore.ValidSubject(sub):
		// The server would refuse the token; say why before it is used.
		return nil, usageErrorf("--sub %s", graphstore.SubjectProblem(sub))
	case !tenantID.MatchString(tid):
		return nil, usageErrorf("--tenant must be 1-63 characters of [a-z0-9_-], starting with a letter or digit (got %q)", tid)
	case ttl <= 0:
		return nil, usageErrorf("--ttl must be positive")
	}
	now := time.Now()
	claims := jwt.MapClaims{"sub": sub, "tid": tid, "iat": now.Unix(), "exp": now.Add(ttl).Unix()}
	if len(roles) > 0 {
		names := make([]string, len(roles))
		for i, r := range roles {
			role, ok := tenancy.ParseRole(r)
			if !ok {
				return nil, usageErrorf("--roles: %q is not reader, worker, dispatcher or admin", r)
			}
			names[i] = role.String()
		}
		claims["roles"] = names
	}
	if issuer != "" {
		claims["iss"] = issuer
	}
	if audience != "" {
		claims["aud"] = audience
	}
	return claims, nil
}

// devSecretPath is where a dev server started here keeps its secret.
func devSecretPath() string {
	return filepath.Join(envflag.String("TETHER_DATA_DIR", "./data"), "dev-secret")
}

// secretFromFile is the secret in the file TETHER_SECRET_FILE names ("" when
// it is not set): the dev server prints its absolute path.
func secretFromFile() (string, error) {
	path := os.Getenv("TETHER_SECRET_FILE")
	if path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", usageErrorf("TETHER_SECRET_FILE: %v", err)
	}
	secret := strings.TrimSpace(string(b))
	if secret == "" {
		return "", usageErrorf("TETHER_SECRET_FILE: %s is empty", path)
	}
	return secret, nil
}

// devSecretNearby is the secret of a dev server started here, or "".
func devSecretNearby() string {
	b, err := os.ReadFile(devSecretPath())
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
