package main

// -vs-river: Tether's (a) and (b) beside River's figures (river.go) on the
// same PostgreSQL, in -rounds alternating rounds (odd rounds run Tether
// first, even rounds River first, so that a drift of the machine's load
// does not favour one side), then the median and the range of each figure
// and of the ratios Tether ÷ River, each ratio from one round's pair. On a
// shared machine the ratio of a round is steadier than either figure.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
)

// versusFigure is one figure over the rounds.
type versusFigure struct {
	Name   string    `json:"name"`
	Rounds []float64 `json:"rounds"`
	Median float64   `json:"median"`
	Min    float64   `json:"min"`
	Max    float64   `json:"max"`
}

func newFigure(name string, rounds []float64) versusFigure {
	s := slices.Clone(rounds)
	slices.Sort(s)
	f := versusFigure{Name: name, Rounds: rounds}
	if len(s) > 0 {
		f.Min, f.Max = s[0], s[len(s)-1]
		f.Median = s[len(s)/2]
		if len(s)%2 == 0 {
			f.Median = (s[len(s)/2-1] + s[len(s)/2]) / 2
		}
	}
	return f
}

// versusSummary is what -vs-river prints last (its JSON form with -json).
type versusSummary struct {
	Summary string         `json:"summary"`
	Store   string         `json:"store"`
	Figures []versusFigure `json:"figures"`
}

// versusRiver runs the rounds and prints every result and the summary.
func (b *bench) versusRiver() error {
	ctx := context.Background()
	rb, err := openRiver(ctx, b.cfg, b.cfg.postgresURL)
	if err != nil {
		return err
	}
	defer rb.close()
	enc := json.NewEncoder(os.Stdout)
	emit := func(rs ...*result) error {
		for _, r := range rs {
			r.finish()
			if b.cfg.json {
				if err := enc.Encode(r); err != nil {
					return err
				}
			} else {
				r.print(os.Stdout)
			}
		}
		return nil
	}
	type side struct {
		name string
		run  func() (*result, error)
	}
	first := func(rs []*result, err error) (*result, error) {
		if err != nil {
			return nil, err
		}
		return rs[0], nil
	}
	tetherA := side{"tether (a)", func() (*result, error) { return first(b.scenarioA(false)) }}
	riverA := side{"river (a)", func() (*result, error) { return rb.riverFewWorkers(ctx) }}
	tetherB := side{"tether (b)", func() (*result, error) { return first(b.scenarioB()) }}
	riverB := side{"river (b)", func() (*result, error) { return rb.riverBurnDown(ctx) }}
	rates := map[string][]float64{}
	for round := 1; round <= b.cfg.rounds; round++ {
		order := []side{tetherA, riverA, tetherB, riverB}
		if round%2 == 0 {
			order = []side{riverA, tetherA, riverB, tetherB}
		}
		for _, sd := range order {
			fmt.Fprintf(os.Stderr, "round %d: %s ...\n", round, sd.name)
			r, err := sd.run()
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", round, sd.name, err)
			}
			r.note("-vs-river round %d of %d", round, b.cfg.rounds)
			if err := emit(r); err != nil {
				return err
			}
			rates[sd.name] = append(rates[sd.name], r.OpsPerS)
		}
	}
	if err := rb.drop(ctx); err != nil {
		return fmt.Errorf("error dropping River's schema: %w", err)
	}
	sum := versusSummary{Summary: "vs-river", Store: b.cfg.describeStore()}
	for _, name := range []string{"a", "b"} {
		t, r := rates["tether ("+name+")"], rates["river ("+name+")"]
		ratios := make([]float64, len(t))
		for i := range t {
			if r[i] > 0 {
				ratios[i] = round3(t[i] / r[i])
			}
		}
		sum.Figures = append(sum.Figures,
			newFigure("tether ("+name+") jobs/s", t),
			newFigure("river ("+name+") jobs/s", r),
			newFigure("("+name+") tether ÷ river", ratios))
	}
	if b.cfg.json {
		return enc.Encode(sum)
	}
	sum.print(os.Stdout, b.cfg.store)
	return nil
}

func (s versusSummary) print(w io.Writer, store string) {
	fmt.Fprintf(w, "== Tether vs River, %d rounds (Tether on %s)\n", len(s.Figures[0].Rounds), store)
	fmt.Fprintf(w, "   %-26s %10s %10s %10s   %s\n", "figure", "median", "min", "max", "rounds")
	for _, f := range s.Figures {
		fmt.Fprintf(w, "   %-26s %10.6g %10.6g %10.6g   %v\n", f.Name, f.Median, f.Min, f.Max, f.Rounds)
	}
	fmt.Fprintln(w, "   - (a): Tether's claim-next + complete, -c clients over HTTP; River with MaxWorkers -c, as a library in the harness")
	fmt.Fprintln(w, "   - (b): Tether's claims of 100 + one batch complete, -c clients over HTTP; River's burn-down with its own bench's tuning")
	if store != storePostgres {
		fmt.Fprintln(w, "   - TETHER WAS NOT ON POSTGRESQL: run with -store postgres for the like-for-like comparison")
	}
	fmt.Fprintln(w)
}
