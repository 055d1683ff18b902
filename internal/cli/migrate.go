package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/tether-run/tether/internal/envflag"
	"github.com/tether-run/tether/internal/pgschema"
)

// defaultPostgresSchema is the schema Tether's tables live in when
// TETHER_POSTGRES_SCHEMA is not set.
const defaultPostgresSchema = "tether"

func migrateCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Bring Tether's PostgreSQL schema up to this release's version",
		Long: `Apply to the PostgreSQL database TETHER_POSTGRES_URL names every migration of
this release that its schema (TETHER_POSTGRES_SCHEMA, default tether) has not
had, in order, each in a transaction of its own, and print what was applied.
Servers started together, or a second migrate, apply each migration once. A
server on PostgreSQL refuses to start on a schema behind its release.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			url := envflag.String("TETHER_POSTGRES_URL", "")
			if url == "" {
				return usageErrorf("TETHER_POSTGRES_URL is not set: set it to the database's URL (postgres://user:password@host:5432/db)")
			}
			schema := envflag.String("TETHER_POSTGRES_SCHEMA", defaultPostgresSchema)
			if err := pgschema.ValidSchema(schema); err != nil {
				return usageErrorf("TETHER_POSTGRES_SCHEMA: %v", err)
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			cfg, err := pgxpool.ParseConfig(url)
			if err != nil {
				return usageErrorf("TETHER_POSTGRES_URL: %v", err)
			}
			cfg.MaxConns = 1
			cfg.ConnConfig.ConnectTimeout = 30 * time.Second
			pool, err := pgxpool.NewWithConfig(ctx, cfg)
			if err != nil {
				return fmt.Errorf("error connecting to PostgreSQL: %w", err)
			}
			defer pool.Close()
			applied, err := pgschema.Migrate(ctx, pool, schema)
			out := cmd.OutOrStdout()
			for _, v := range applied {
				fmt.Fprintf(out, "applied %s\n", migrationName(v))
			}
			if err != nil {
				return err
			}
			cur, err := pgschema.Current(ctx, pool, schema)
			if err != nil {
				return err
			}
			if len(applied) == 0 {
				fmt.Fprintf(out, "schema %s is up to date at version %d\n", schema, cur)
				return nil
			}
			fmt.Fprintf(out, "schema %s is at version %d\n", schema, cur)
			return nil
		},
	}
}

// migrationName is the file name of migration version v.
func migrationName(v int) string {
	for _, m := range pgschema.Migrations() {
		if m.Version == v {
			return strings.TrimSuffix(m.Name, ".sql")
		}
	}
	return fmt.Sprint(v)
}
