package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestRiverFiguresCountEveryJob runs both River figures on a real
// PostgreSQL with small backlogs: the burn-down counts every job it
// inserted, once, and the windowed run counts completions in its window.
func TestRiverFiguresCountEveryJob(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	cfg := config{preloadBatched: 500, preload: 5000, clients: 4, warmup: 100 * time.Millisecond, duration: 300 * time.Millisecond}
	rb, err := openRiver(ctx, cfg, url)
	require.NoError(t, err)
	defer rb.close()

	burn, err := rb.riverBurnDown(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 500, burn.Ops, "every inserted job completed and counted once")
	require.Positive(t, burn.OpsPerS)

	few, err := rb.riverFewWorkers(ctx)
	require.NoError(t, err)
	require.Positive(t, few.Ops)
	require.LessOrEqual(t, few.Ops, int64(5000))
	var completed int64
	require.NoError(t, rb.pool.QueryRow(ctx, "SELECT count(*) FROM "+riverSchema+".river_job WHERE state = 'completed'").Scan(&completed))
	require.GreaterOrEqual(t, completed, few.Ops, "no completion counted that River did not write")

	require.NoError(t, rb.drop(ctx))
}

func TestFigureMedianAndRange(t *testing.T) {
	f := newFigure("x", []float64{3, 1, 2})
	require.Equal(t, versusFigure{Name: "x", Rounds: []float64{3, 1, 2}, Median: 2, Min: 1, Max: 3}, f)
	require.Equal(t, 2.5, newFigure("y", []float64{4, 1, 2, 3}).Median)
}
