package serve

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tether-run/tether/internal/envflag"
	"github.com/tether-run/tether/internal/intake"
)

// What TETHER_POSTGRES_INTAKE may say: whether this server consumes the
// intake table (rows applications enqueue in their own transactions).
const (
	intakeAuto = "auto" // on when a JWT secret lets the intake sign its requests
	intakeOn   = "on"
	intakeOff  = "off"
)

// loadIntakeEnv reads TETHER_POSTGRES_INTAKE.
func loadIntakeEnv() (string, error) {
	v := strings.ToLower(envflag.String("TETHER_POSTGRES_INTAKE", intakeAuto))
	switch v {
	case intakeAuto, intakeOn, intakeOff:
		return v, nil
	}
	return "", fmt.Errorf("TETHER_POSTGRES_INTAKE must be %s, %s or %s, not %q", intakeAuto, intakeOn, intakeOff, v)
}

// startIntake starts the consumer of the schema's intake table, which makes
// each committed row's node through front (the cluster's front, so a
// tenant's node is made on its shard's owner) with a token signed by the
// server's first HS256 secret. It returns the consumer's Stop, to run
// before the front shuts down; nil when the intake is off.
func startIntake(ctx context.Context, s settings, pool *pgxpool.Pool, front http.Handler, log *slog.Logger) (stop func(), err error) {
	mode, tenants := s.Postgres.Intake, s.Server.Tenant
	secret := ""
	if len(tenants.JWTSecrets) > 0 {
		secret = tenants.JWTSecrets[0]
	}
	switch {
	case mode == intakeOff:
		return nil, nil
	case secret == "" && mode == intakeOn:
		return nil, fmt.Errorf("TETHER_POSTGRES_INTAKE=%s needs TETHER_JWT_SECRET: the intake signs its requests with it", intakeOn)
	case secret == "":
		log.Info("the intake is off: it needs TETHER_JWT_SECRET to sign its requests", "schema", s.Postgres.Schema)
		return nil, nil
	}
	c, err := intake.New(intake.Config{
		Pool: pool, Schema: s.Postgres.Schema, Logger: log,
		Creator: &intake.HandlerCreator{Handler: front, Signer: &intake.Signer{
			Secret: secret, Issuer: tenants.Issuer, Audience: tenants.Audience, Clock: s.Server.Clock,
		}},
	})
	if err != nil {
		return nil, err
	}
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	log.Info("consuming the intake table", "table", s.Postgres.Schema+".intake")
	return c.Stop, nil
}
