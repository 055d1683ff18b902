// Command tether-bench drives a real `tether serve` process over HTTP/1.1
// and reports throughput, latency percentiles per request type, errors, and
// the server's peak RSS and CPU time, scenario by scenario.
//
//	go run ./cmd/tether-bench -quick           # every scenario for ~1 s (CI smoke)
//	go run ./cmd/tether-bench -c 32 -d 10s     # the real run
//	go run ./cmd/tether-bench -scenarios a,h -json
//	go run ./cmd/tether-bench -store etcd -etcd-endpoints http://127.0.0.1:2379 -servers 3
//	go run ./cmd/tether-bench -store postgres -postgres-url postgres://... -vs-river
//
// With -store etcd every stage starts -servers processes over one etcd
// cluster under a fresh key prefix (TETHER_STORE=etcd) and spreads its
// clients over -tenants tenants, so that the tenants' shards spread over the
// servers; scenarios (a) to (d), (h) and (i) run that way.
//
// With -store postgres the same, over one PostgreSQL (TETHER_STORE=postgres)
// with a fresh schema per stage. -vs-river runs (a) and (b) against River,
// a Go job queue on PostgreSQL, used as a library on the same database
// (river.go, versus_river.go): three alternating rounds, medians, ranges
// and ratios.
//
// Scenarios: a claim-next+complete, b claims+batch complete, c claim/renew/
// release by id, d renew only, e fan-out, f reaper lag, g the backlog's cost
// (a server restarted on -scale-nodes queued nodes: start-up, RSS and Go heap
// per node at ready, (a) on it against (a) on 1k nodes), h GET /health beside
// (a), i (a) with each complete asking for the next claim (one request per
// job), k (a) on 1M queued nodes over 100 000 concurrency keys with a limit
// on every key, against the same without limits (server CPU per pair).
//
//	go run ./cmd/tether-bench -scenarios g -scale-nodes 10000000   # the memory targets' size
package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
)

// config is the run's settings, from flags.
type config struct {
	tether         string
	clients        int
	client         string // clientRaw or clientGo
	duration       time.Duration
	warmup         time.Duration
	scenarios      []string
	preload        int
	preloadBatched int
	scaleNodes     int
	maxNodeHeap    float64 // -max-heap-per-node: (g) fails above it (0: no check)
	reaperLeases   int
	// (k): the backlog, its keys, the rounds of each mode, and the
	// ratio of server CPU per pair with limits to without above which it
	// fails (0: report only).
	flowNodes, flowKeys, flowRounds int
	maxLimitCPURatio                float64
	fanoutChildren                  int
	json                            bool
	quick                           bool
	keep                            bool

	// The store the servers run on (see cluster.go).
	store         string   // "badger" or "etcd"
	etcdEndpoints []string // with etcd
	etcdPrefix    string   // every stage's prefix starts with it
	etcdShards    int      // TETHER_ETCD_SHARDS; 0: the server's default
	etcdMaxOps    int      // TETHER_ETCD_MAX_TXN_OPS; 0: the server's default
	etcdLeaseTTL  time.Duration
	reference     etcdReference // -etcd-benchmark
	etcdPipeline  int           // TETHER_ETCD_PIPELINE; 0: the server's default
	servers       int           // tether processes per stage
	tenants       int           // tenants the clients are spread over
	postgresURL   string        // with -store postgres, and River's with -vs-river

	// -vs-river (versus_river.go).
	vsRiver bool
	rounds  int
}

// The harness's HTTP clients (-client).
const (
	clientRaw = "raw"
	clientGo  = "go"
)

var allScenarios = []string{"a", "h", "i", "b", "c", "d", "e", "f", "g", "k"}

func parseFlags() (config, error) {
	var c config
	var list, endpoints string
	flag.StringVar(&c.tether, "tether", "", "path of the tether binary (default: go build ./cmd/tether into a temp dir)")
	flag.IntVar(&c.clients, "c", 32, "concurrent clients, each its own identity")
	flag.StringVar(&c.client, "client", clientRaw, "the harness's HTTP client: raw (its own HTTP/1.1, as wrk) or go (net/http's, ~4× its CPU per request)")
	flag.DurationVar(&c.duration, "d", 10*time.Second, "measured time per scenario")
	flag.DurationVar(&c.warmup, "warmup", time.Second, "unmeasured warm-up before each measurement")
	flag.StringVar(&list, "scenarios", strings.Join(allScenarios, ","), "comma separated scenarios to run: a,b,c,d,e,f,g,h,i,k")
	flag.IntVar(&c.preload, "preload", 200000, "queued nodes preloaded for (a)")
	flag.IntVar(&c.preloadBatched, "preload-batched", 200000, "queued nodes preloaded for (b)")
	flag.IntVar(&c.scaleNodes, "scale-nodes", 1000000, "queued nodes preloaded for (g) (its restart, memory per node, and (a) on that backlog)")
	flag.Float64Var(&c.maxNodeHeap, "max-heap-per-node", 0, "fail (g) when the Go heap in use per queued node is above this many bytes (0: report only); a memory smoke run's assertion")
	flag.IntVar(&c.reaperLeases, "reaper-leases", 10000, "leases that expire together in (f)")
	flag.IntVar(&c.flowNodes, "flow-nodes", 1000000, "queued nodes preloaded on each of (k)'s two servers")
	flag.IntVar(&c.flowKeys, "flow-keys", 100000, "distinct concurrency keys over (k)'s nodes (10 consecutive nodes share one)")
	flag.IntVar(&c.flowRounds, "flow-rounds", 3, "measured rounds of each of (k)'s modes, alternating")
	flag.Float64Var(&c.maxLimitCPURatio, "max-limit-cpu-ratio", 0, "fail (k) when its server CPU per pair with limits is above this many times that without (0: report only)")
	flag.IntVar(&c.fanoutChildren, "fanout-children", 1000, "children of the parent in (e) (at most 1000)")
	flag.BoolVar(&c.json, "json", false, "print one JSON object per scenario instead of text")
	flag.BoolVar(&c.quick, "quick", false, "every scenario for ~1 s with small preloads (CI smoke run)")
	flag.BoolVar(&c.keep, "keep", false, "keep the temp dir (data dirs and server logs) and, with etcd, the stages' keys")
	flag.StringVar(&c.store, "store", storeBadger, "the servers' store: badger (a data dir each), etcd (TETHER_STORE=etcd) or postgres (TETHER_STORE=postgres)")
	flag.StringVar(&c.postgresURL, "postgres-url", "", "PostgreSQL URL of the servers with -store postgres (a fresh schema per stage), and River's with -vs-river (schema "+riverSchema+")")
	flag.BoolVar(&c.vsRiver, "vs-river", false, "run Tether's (a) and (b) against River on -postgres-url, alternating, -rounds times, and report the medians, ranges and ratios")
	flag.IntVar(&c.rounds, "rounds", 3, "rounds of -vs-river")
	flag.StringVar(&endpoints, "etcd-endpoints", "", "comma separated etcd client URLs (with -store etcd)")
	flag.StringVar(&c.etcdPrefix, "etcd-prefix", "/tether-bench/", "key prefix of the run in etcd; each stage gets a fresh prefix under it")
	flag.IntVar(&c.etcdShards, "etcd-shards", 0, "TETHER_ETCD_SHARDS of the servers (0: the server's default)")
	flag.IntVar(&c.etcdMaxOps, "etcd-max-txn-ops", 0, "TETHER_ETCD_MAX_TXN_OPS of the servers: etcd's --max-txn-ops (0: the server's default, 128)")
	flag.DurationVar(&c.etcdLeaseTTL, "etcd-lease-ttl", 0, "TETHER_ETCD_LEASE_TTL_MS of the servers (0: the server's default)")
	flag.IntVar(&c.etcdPipeline, "etcd-pipeline", 0, "TETHER_ETCD_PIPELINE of the servers: write groups a shard keeps in flight (0: the server's default, 1)")
	flag.StringVar(&c.reference.tool, "etcd-benchmark", "", "path of etcd's benchmark tool (go.etcd.io/etcd/v3/tools/benchmark): after each scenario, run its put with -c clients against the same cluster and report Tether's store writes/s ÷ its puts/s (with -store etcd)")
	flag.IntVar(&c.reference.total, "etcd-benchmark-total", 20000, "puts of each -etcd-benchmark run")
	flag.IntVar(&c.servers, "servers", 1, "tether server processes per stage (more than 1 needs -store etcd or postgres); clients are spread over them")
	flag.IntVar(&c.tenants, "tenants", 0, "tenants the clients are spread over, client i in tenant i mod n (0: 1 with badger, min(c, 16) with etcd)")
	flag.Parse()
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if c.quick {
		quick := map[string]func(){
			"d":       func() { c.duration = time.Second },
			"warmup":  func() { c.warmup = 200 * time.Millisecond },
			"preload": func() { c.preload = 20000 },
			"preload-batched": func() {
				c.preloadBatched = 40000
			},
			"scale-nodes":   func() { c.scaleNodes = 20000 },
			"reaper-leases": func() { c.reaperLeases = 2000 },
			"flow-nodes":    func() { c.flowNodes = 20000 },
			"flow-keys":     func() { c.flowKeys = 2000 },
		}
		for name, apply := range quick {
			if !set[name] {
				apply()
			}
		}
	}
	if !set["scenarios"] && c.isShared() {
		list = strings.Join(etcdScenarios, ",")
	}
	if c.vsRiver {
		if set["scenarios"] {
			return c, fmt.Errorf("-vs-river runs scenarios a and b: leave out -scenarios")
		}
		list = "a,b"
		if c.quick && !set["rounds"] {
			c.rounds = 1
		}
	}
	for s := range strings.SplitSeq(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !slices.Contains(allScenarios, s) {
			return c, fmt.Errorf("unknown scenario %q (want some of %s)", s, strings.Join(allScenarios, ","))
		}
		if !slices.Contains(c.scenarios, s) {
			c.scenarios = append(c.scenarios, s)
		}
	}
	switch {
	case c.clients < 1:
		return c, fmt.Errorf("-c must be at least 1")
	case c.client != clientRaw && c.client != clientGo:
		return c, fmt.Errorf("-client must be %s or %s", clientRaw, clientGo)
	case c.duration <= 0 || c.warmup < 0:
		return c, fmt.Errorf("-d must be positive and -warmup not negative")
	case c.fanoutChildren < 1 || c.fanoutChildren > 1000:
		return c, fmt.Errorf("-fanout-children must be 1 to 1000")
	case c.maxNodeHeap < 0:
		return c, fmt.Errorf("-max-heap-per-node must not be negative")
	case c.flowRounds < 1 || c.maxLimitCPURatio < 0:
		return c, fmt.Errorf("-flow-rounds must be at least 1 and -max-limit-cpu-ratio not negative")
	case c.reaperLeases < 1 || c.preload < 1 || c.preloadBatched < 1 || c.scaleNodes < 1 || c.flowNodes < 1 || c.flowKeys < 1:
		return c, fmt.Errorf("preload sizes must be positive")
	case c.rounds < 1 || c.rounds > 9:
		return c, fmt.Errorf("-rounds must be 1 to 9")
	}
	return c, c.checkStore(endpoints)
}

func main() {
	cfg, err := parseFlags()
	if err != nil {
		fmt.Fprintln(os.Stderr, "tether-bench:", err)
		os.Exit(2)
	}
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "tether-bench:", err)
		os.Exit(1)
	}
}

func run(cfg config) error {
	tmp, err := os.MkdirTemp("", "tether-bench-")
	if err != nil {
		return err
	}
	if cfg.keep {
		fmt.Fprintln(os.Stderr, "keeping", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	runStart := time.Now()
	bin, source := cfg.tether, "given with -tether"
	if bin == "" {
		fmt.Fprintln(os.Stderr, "building ./cmd/tether ...")
		if bin, source, err = buildTether(tmp); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "built in %.1fs\n", time.Since(runStart).Seconds())
	}
	b, err := newBench(cfg, bin, tmp)
	if err != nil {
		return err
	}
	defer b.l.killAll()
	defer b.closeEtcd()
	defer b.closePostgres()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-sigs
		fmt.Fprintln(os.Stderr, "interrupted: stopping the servers")
		b.l.killAll()
		if !cfg.keep {
			os.RemoveAll(tmp)
		}
		os.Exit(130)
	}()

	if !cfg.json {
		fmt.Printf("tether-bench: %d clients (%s HTTP client), %v per scenario after %v warm-up; %d CPUs, %s/%s, %s\n",
			cfg.clients, cfg.client, cfg.duration, cfg.warmup, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())
		fmt.Printf("server: %s, %s (durable writes, TETHER_REAPER_INTERVAL_MS=1000)\n", bin, source)
		fmt.Printf("store: %s\n\n", cfg.describeStore())
	}
	if cfg.vsRiver {
		return b.versusRiver()
	}
	type timing struct {
		name string
		took time.Duration
	}
	var timings []timing
	enc := json.NewEncoder(os.Stdout)
	want := func(s string) bool { return slices.Contains(cfg.scenarios, s) }
	for _, name := range cfg.scenarios {
		var runIt func() ([]*result, error)
		switch name {
		case "a":
			runIt = func() ([]*result, error) { return b.scenarioA(want("h")) }
		case "h":
			if want("a") {
				continue // ran on (a)'s server
			}
			runIt = b.scenarioH
		case "b":
			runIt = b.scenarioB
		case "c":
			runIt = b.scenarioC
		case "d":
			runIt = b.scenarioD
		case "e":
			runIt = b.scenarioE
		case "f":
			runIt = b.scenarioF
		case "g":
			runIt = b.scenarioG
		case "i":
			runIt = b.scenarioI
		case "k":
			runIt = b.scenarioK
		}
		fmt.Fprintf(os.Stderr, "scenario %s ...\n", name)
		began := time.Now()
		results, err := runIt()
		took := time.Since(began)
		if err == nil {
			err = b.compareToEtcd(results)
		}
		for _, r := range results {
			r.finish()
			if cfg.json {
				if err := enc.Encode(r); err != nil {
					return err
				}
			} else {
				r.print(os.Stdout)
			}
		}
		if err != nil {
			return fmt.Errorf("scenario %s: %w", name, err)
		}
		label := name
		if name == "a" && want("h") {
			label = "a+h"
		}
		timings = append(timings, timing{label, took})
		fmt.Fprintf(os.Stderr, "scenario %s took %.1fs\n", label, took.Seconds())
	}
	if !cfg.json {
		fmt.Println("wall time per scenario (server start, preload, warm-up, measurement, stop):")
		for _, t := range timings {
			fmt.Printf("   %-4s %6.1fs\n", t.name, t.took.Seconds())
		}
		fmt.Printf("   total %5.1fs\n", time.Since(runStart).Seconds())
	}
	return nil
}

func newBench(cfg config, bin, tmp string) (*bench, error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, err
	}
	secret := hex.EncodeToString(raw[:])
	b := &bench{cfg: cfg, l: &launcher{bin: bin, secret: secret, tmp: tmp, cfg: cfg, running: map[*serverProc]bool{}}}
	for t := range cfg.tenants {
		tok, err := mint(secret, "dispatcher", tenantName(cfg.tenants, t), "dispatcher")
		if err != nil {
			return nil, err
		}
		b.dispTokens = append(b.dispTokens, tok)
	}
	for i := range cfg.clients {
		tok, err := mint(secret, fmt.Sprintf("worker-%d", i), tenantName(cfg.tenants, cfg.tenantOf(i)), "worker")
		if err != nil {
			return nil, err
		}
		b.workerTokens = append(b.workerTokens, tok)
	}
	switch cfg.store {
	case storeEtcd:
		if err := b.openEtcd(); err != nil {
			return nil, err
		}
	case storePostgres:
		if err := b.openPostgres(); err != nil {
			return nil, err
		}
	}
	return b, nil
}
