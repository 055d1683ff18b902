package main

// etcd's own figure beside Tether's: with -etcd-benchmark, after each
// scenario that wrote to etcd, the harness runs etcd's benchmark tool
// (go.etcd.io/etcd/v3/tools/benchmark) `put` against the same cluster with
// the same number of clients, while no Tether server runs, and reports
// Tether's store writes per second in the scenario's window divided by the
// tool's puts per second, with both figures.

import (
	"bytes"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
)

// etcdReference is how the reference run is made.
type etcdReference struct {
	tool  string // the benchmark binary; "" for none
	total int    // puts per reference run
}

// putsPerSecond runs `benchmark put` with clients clients over conns gRPC
// connections and returns its Requests/sec and the command it ran.
func (c config) putsPerSecond(clients, conns int) (float64, string, error) {
	eps := make([]string, len(c.etcdEndpoints))
	for i, e := range c.etcdEndpoints {
		eps[i] = strings.TrimPrefix(strings.TrimPrefix(e, "http://"), "https://")
	}
	args := []string{
		"--endpoints=" + strings.Join(eps, ","),
		"--conns=" + strconv.Itoa(conns), "--clients=" + strconv.Itoa(clients),
		"put", "--key-size=40", "--val-size=300", "--sequential-keys", "--key-space-size=100000",
		"--total=" + strconv.Itoa(c.reference.total),
	}
	cmd := exec.Command(c.reference.tool, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	line := "benchmark " + strings.Join(args, " ")
	if err := cmd.Run(); err != nil {
		return 0, line, fmt.Errorf("%s: %w: %.500s", line, err, out.String())
	}
	m := requestsPerSec.FindSubmatch(out.Bytes())
	if m == nil {
		return 0, line, fmt.Errorf("%s printed no Requests/sec: %.500s", line, out.String())
	}
	rate, err := strconv.ParseFloat(string(m[1]), 64)
	return rate, line, err
}

var requestsPerSec = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)

// compareToEtcd adds to each result with store writes the ratio of its
// writes per second to etcd's puts per second, measured now.
func (b *bench) compareToEtcd(results []*result) error {
	if b.cfg.reference.tool == "" || b.cfg.store != storeEtcd {
		return nil
	}
	var wrote []*result
	for _, r := range results {
		if r.StoreWritesPerS > 0 {
			wrote = append(wrote, r)
		}
	}
	if len(wrote) == 0 {
		return nil
	}
	puts, line, err := b.cfg.putsPerSecond(b.cfg.clients, b.cfg.servers)
	if err != nil {
		return err
	}
	for _, r := range wrote {
		r.EtcdPutsPerS = round3(puts)
		r.EtcdRatio = round3(r.StoreWritesPerS / puts)
		r.note("etcd reference: Tether %.0f store writes/s ÷ etcd's own %.0f puts/s = %.2f× (%s, run right after the scenario)",
			r.StoreWritesPerS, puts, r.EtcdRatio, line)
	}
	return nil
}
