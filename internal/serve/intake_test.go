package serve

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
)

// TETHER_POSTGRES_INTAKE is auto unless set, a bad value is refused with
// the setting named, and the intake needs a JWT secret to sign with: on
// without one refuses to start, auto leaves the intake off.
func TestIntakeSetting(t *testing.T) {
	t.Setenv("TETHER_POSTGRES_INTAKE", "")
	mode, err := loadIntakeEnv()
	require.NoError(t, err)
	require.Equal(t, intakeAuto, mode)
	t.Setenv("TETHER_POSTGRES_INTAKE", "OFF")
	mode, err = loadIntakeEnv()
	require.NoError(t, err)
	require.Equal(t, intakeOff, mode)
	t.Setenv("TETHER_POSTGRES_INTAKE", "maybe")
	_, err = loadIntakeEnv()
	require.ErrorContains(t, err, `TETHER_POSTGRES_INTAKE must be auto, on or off, not "maybe"`)

	log := slog.New(slog.DiscardHandler)
	for _, mode := range []string{intakeAuto, intakeOff} {
		var s settings
		s.Postgres.Intake = mode
		stop, err := startIntake(context.Background(), s, nil, nil, log)
		require.NoError(t, err, mode)
		require.Nil(t, stop, "%s without a secret: no intake", mode)
	}
	var s settings
	s.Postgres.Intake = intakeOn
	_, err = startIntake(context.Background(), s, nil, nil, log)
	require.ErrorContains(t, err, "TETHER_POSTGRES_INTAKE=on needs TETHER_JWT_SECRET")
}
