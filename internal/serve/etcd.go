package serve

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tether-run/tether/internal/cluster"
	"github.com/tether-run/tether/internal/envflag"
)

// Stores `tether serve` runs on (TETHER_STORE).
const (
	storeBadger   = "badger"
	storeEtcd     = "etcd"
	storePostgres = "postgres"
)

// etcdSettings are the TETHER_ETCD_* settings of TETHER_STORE=etcd.
type etcdSettings struct {
	Endpoints          []string
	Prefix             string
	Username, Password string
	CAFile             string
	CertFile, KeyFile  string
	Shards             int
	LeaseTTL           time.Duration
	MaxTxnOps          int
	Pipeline           int
	Advertise          string
	BlobDir            string
}

// loadStoreEnv reads TETHER_STORE and, for etcd or PostgreSQL, its
// settings, with the flags in f over them; s.Addr is the listen address
// (the default advertise URL's host).
func loadStoreEnv(s *settings, f storeFlags) error {
	s.Store = strings.ToLower(envflag.Or(f.store, envflag.String("TETHER_STORE", storeBadger)))
	switch s.Store {
	case storeBadger:
		return nil
	case storeEtcd:
		return loadEtcdEnv(s, f)
	case storePostgres:
		return loadPostgresEnv(s, f)
	default:
		return fmt.Errorf("TETHER_STORE must be %s, %s or %s, not %q", storeBadger, storeEtcd, storePostgres, s.Store)
	}
}

// loadEtcdEnv reads the settings of TETHER_STORE=etcd.
func loadEtcdEnv(s *settings, f storeFlags) error {
	e := etcdSettings{
		Endpoints: envflag.List("TETHER_ETCD_ENDPOINTS"),
		Prefix:    envflag.String("TETHER_ETCD_PREFIX", cluster.DefaultPrefix),
		Username:  os.Getenv("TETHER_ETCD_USERNAME"),
		Password:  os.Getenv("TETHER_ETCD_PASSWORD"),
		CAFile:    os.Getenv("TETHER_ETCD_CA_FILE"),
		CertFile:  os.Getenv("TETHER_ETCD_CERT_FILE"),
		KeyFile:   os.Getenv("TETHER_ETCD_KEY_FILE"),
	}
	if f.endpoints != "" {
		e.Endpoints = envflag.Split(f.endpoints)
	}
	shards, err := envflag.Int("TETHER_ETCD_SHARDS", cluster.DefaultShards)
	if err != nil {
		return err
	}
	ttlMS, err := envflag.Int("TETHER_ETCD_LEASE_TTL_MS", cluster.DefaultLeaseTTL.Milliseconds())
	if err != nil {
		return err
	}
	maxOps, err := envflag.Int("TETHER_ETCD_MAX_TXN_OPS", 128)
	if err != nil {
		return err
	}
	pipeline, err := envflag.Int("TETHER_ETCD_PIPELINE", 1)
	if err != nil {
		return err
	}
	switch {
	case len(e.Endpoints) == 0:
		return fmt.Errorf("TETHER_STORE=etcd needs TETHER_ETCD_ENDPOINTS (the etcd client URLs, comma separated)")
	case shards < 1 || shards > cluster.MaxShards:
		return fmt.Errorf("TETHER_ETCD_SHARDS must be from 1 to %d, not %d", cluster.MaxShards, shards)
	case ttlMS < cluster.MinLeaseTTL.Milliseconds() || ttlMS > cluster.MaxLeaseTTL.Milliseconds():
		return fmt.Errorf("TETHER_ETCD_LEASE_TTL_MS must be from %d to %d, not %d", cluster.MinLeaseTTL.Milliseconds(), cluster.MaxLeaseTTL.Milliseconds(), ttlMS)
	case maxOps < 16 || maxOps > 1<<20:
		return fmt.Errorf("TETHER_ETCD_MAX_TXN_OPS must be from 16 to %d (etcd's --max-txn-ops), not %d", 1<<20, maxOps)
	case pipeline < 1 || pipeline > 64:
		return fmt.Errorf("TETHER_ETCD_PIPELINE must be from 1 to 64, not %d", pipeline)
	case !strings.HasPrefix(e.Prefix, "/") || !strings.HasSuffix(e.Prefix, "/"):
		return fmt.Errorf("TETHER_ETCD_PREFIX must begin and end with /, not %q", e.Prefix)
	case (e.Username == "") != (e.Password == ""):
		return fmt.Errorf("TETHER_ETCD_USERNAME and TETHER_ETCD_PASSWORD go together")
	case (e.CertFile == "") != (e.KeyFile == ""):
		return fmt.Errorf("TETHER_ETCD_CERT_FILE and TETHER_ETCD_KEY_FILE go together")
	}
	for _, ep := range e.Endpoints {
		if u, err := url.Parse(ep); err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return fmt.Errorf("TETHER_ETCD_ENDPOINTS: %q is not an http(s)://host:port URL", ep)
		}
	}
	e.Shards, e.LeaseTTL, e.MaxTxnOps, e.Pipeline = int(shards), time.Duration(ttlMS)*time.Millisecond, int(maxOps), int(pipeline)
	if e.Advertise, e.BlobDir, err = loadMemberEnv(s.Addr, f); err != nil {
		return err
	}
	s.Etcd = e
	return nil
}

// loadMemberEnv reads the settings of a server of a cluster, on etcd or
// PostgreSQL: the URL the others reach it at (from the listen address addr
// when not set) and the shared blob directory.
func loadMemberEnv(addr string, f storeFlags) (advertise, blobDir string, err error) {
	advertise = envflag.Or(f.advertise, os.Getenv("TETHER_ADVERTISE_URL"))
	blobDir = os.Getenv("TETHER_BLOB_DIR")
	if advertise == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil || host == "" || net.ParseIP(host) != nil && net.ParseIP(host).IsUnspecified() {
			return "", "", fmt.Errorf("TETHER_ADDR %q is not an address other servers can reach: set TETHER_ADVERTISE_URL (http://host:port)", addr)
		}
		advertise = "http://" + addr
	} else if u, err := url.Parse(advertise); err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", "", fmt.Errorf("TETHER_ADVERTISE_URL must be http(s)://host:port, not %q", advertise)
	}
	if blobDir != "" {
		if st, err := os.Stat(blobDir); err != nil || !st.IsDir() {
			return "", "", fmt.Errorf("TETHER_BLOB_DIR %q is not a directory", blobDir)
		}
	}
	return advertise, blobDir, nil
}

// client connects to the etcd cluster of e (TLS with an https endpoint or
// a CA or client certificate given).
func (e etcdSettings) client() (*clientv3.Client, error) {
	cfg := clientv3.Config{
		Endpoints: e.Endpoints, Username: e.Username, Password: e.Password,
		DialTimeout: 5 * time.Second, DialKeepAliveTime: 10 * time.Second, DialKeepAliveTimeout: 5 * time.Second,
	}
	if e.CAFile != "" || e.CertFile != "" || strings.HasPrefix(e.Endpoints[0], "https://") {
		tc, err := transport.TLSInfo{TrustedCAFile: e.CAFile, CertFile: e.CertFile, KeyFile: e.KeyFile}.ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("error loading the etcd TLS files: %w", err)
		}
		cfg.TLS = tc
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("error connecting to etcd at %s: %w", strings.Join(e.Endpoints, ","), err)
	}
	return cli, nil
}

// serveCluster runs this server as one of a cluster on etcd until a
// signal: it joins, serves the front on ln, and at the signal hands its
// shards over and leaves.
func serveCluster(ctx context.Context, s settings, ln, metricsLn net.Listener, log *slog.Logger, printBanner func(url string) error) error {
	cli, err := s.Etcd.client()
	if err != nil {
		ln.Close()
		return err
	}
	defer cli.Close()
	cfg := s.Server
	cfg.DataDir = ""
	cfg.BlobDir = s.Etcd.BlobDir
	openCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	node, err := cluster.Open(openCtx, cluster.Config{
		Client: cli, Prefix: s.Etcd.Prefix, Shards: s.Etcd.Shards, Advertise: s.Etcd.Advertise,
		LeaseTTL: s.Etcd.LeaseTTL, MaxTxnOps: s.Etcd.MaxTxnOps, Pipeline: s.Etcd.Pipeline, Server: cfg, Logger: log,
	})
	cancel()
	if err != nil {
		ln.Close()
		return fmt.Errorf("etcd at %s: %w", strings.Join(s.Etcd.Endpoints, ","), err)
	}
	log.Info("tether is serving on etcd", "addr", ln.Addr().String(), "advertise", s.Etcd.Advertise, "id", node.ID(),
		"prefix", s.Etcd.Prefix, "shards", s.Etcd.Shards, "lease_ttl", s.Etcd.LeaseTTL.String(), buildLogAttrs())
	serveMetrics(metricsLn, node.ServeMetrics, log)
	if err := printBanner("http://" + ln.Addr().String()); err != nil {
		return err
	}
	return serveUntilSignal(log, func() error { return node.Serve(ln) }, node.Shutdown, "handing the shards over and draining")
}
