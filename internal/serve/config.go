package serve

import (
	"fmt"
	"os"
	"time"

	"github.com/tether-run/tether/api"
	"github.com/tether-run/tether/internal/core"
	"github.com/tether-run/tether/internal/duration"
	"github.com/tether-run/tether/internal/envflag"
	"github.com/tether-run/tether/internal/fleet"
	"github.com/tether-run/tether/internal/mcp"
	"github.com/tether-run/tether/internal/queuemetrics"
	"github.com/tether-run/tether/internal/server"
	"github.com/tether-run/tether/internal/tenancy"
)

// settings are the serve options, from flags over the environment over defaults.
type settings struct {
	Addr      string
	DataDir   string
	Dev       bool
	PprofAddr string // TETHER_PPROF_ADDR: serve /debug/pprof there (off when empty)
	// MetricsAddr is TETHER_METRICS_ADDR: serve every series of /metrics,
	// the per-tenant ones included, there without a token (off when empty).
	MetricsAddr string
	Server      server.Config
	// Store is TETHER_STORE: badger (the data directory), etcd (a cluster
	// of servers over etcd, with the settings in Etcd) or postgres (a
	// cluster of servers over PostgreSQL, with the settings in Postgres).
	Store    string
	Etcd     etcdSettings
	Postgres postgresSettings
	// MCP are the /mcp settings (TETHER_MCP_*); serve adds the logger.
	MCP mcp.HTTPOptions

	// MemoryLimit is TETHER_MEMORY_LIMIT (--memory-limit): the Go heap's soft
	// limit, or empty for GOMEMLIMIT's or the cgroup's (internal/memlimit).
	MemoryLimit string
}

// maxWorkerOfflineMS bounds TETHER_WORKER_OFFLINE_RETENTION_MS: no worker
// record is kept longer than fleet.Retention.
const maxWorkerOfflineMS = int64(fleet.Retention / time.Millisecond)

// maxMetricsLabels bounds TETHER_METRICS_MAX_TENANTS and
// TETHER_METRICS_MAX_QUEUES: past it a scrape is no longer small.
const maxMetricsLabels = 10000

// maxBlobGraceMS bounds TETHER_BLOB_GRACE_MS (a year), far from overflowing
// as nanoseconds.
const maxBlobGraceMS = 365 * 24 * 3600 * 1000

// maxMCPIdleMS bounds TETHER_MCP_SESSION_IDLE_MS: an idle session keeps its
// leases renewed, so it should not outlive a day.
const maxMCPIdleMS = 24 * 3600 * 1000

// loadEnv reads every TETHER_* setting (the table in docs/configuration.md) and the Spine tokens.
func loadEnv() (settings, error) {
	s := settings{
		Addr:      envflag.String("TETHER_ADDR", "127.0.0.1:36725"),
		DataDir:   envflag.String("TETHER_DATA_DIR", "./data"),
		PprofAddr: os.Getenv("TETHER_PPROF_ADDR"),
		// The per-tenant series name every tenant: never on a public port
		// by default.
		MetricsAddr: os.Getenv("TETHER_METRICS_ADDR"),
	}
	s.MemoryLimit = os.Getenv("TETHER_MEMORY_LIMIT")
	var ttlDefault, ttlMax, ttlCeiling, maxAttempts, reaperMS, maxBody, workerStaleMS, retentionMS, cleanerMS int64
	var waitsIdentity, waitsTenant int64
	var blobMax, blobGraceMS, blobQuota int64
	var retryInitialMS, retryMaxMS int64
	var mcpSessions, mcpSessionsIdentity, mcpIdleMS int64
	var metricsTenants, metricsQueues, workerOfflineMS int64
	var workersIdentity, workersTenant int64
	for name, spec := range map[string]struct {
		dst *int64
		def int64
	}{
		"TETHER_CLAIM_TTL_DEFAULT_MS":        {&ttlDefault, 300000},
		"TETHER_CLAIM_TTL_MAX_MS":            {&ttlMax, 7200000},
		"TETHER_CLAIM_TTL_CEILING_MS":        {&ttlCeiling, 86400000},
		"TETHER_MAX_ATTEMPTS":                {&maxAttempts, 5},
		"TETHER_REAPER_INTERVAL_MS":          {&reaperMS, 1000},
		"TETHER_MAX_BODY_BYTES":              {&maxBody, 1 << 20},
		"TETHER_WORKER_STALE_MS":             {&workerStaleMS, 90000},
		"TETHER_WORKER_OFFLINE_RETENTION_MS": {&workerOfflineMS, 600000},
		"TETHER_WORKER_MAX_PER_IDENTITY":     {&workersIdentity, fleet.DefaultMaxPerIdentity},
		"TETHER_WORKER_MAX_PER_TENANT":       {&workersTenant, fleet.DefaultMaxPerTenant},
		"TETHER_RETENTION_MS":                {&retentionMS, 604800000},
		"TETHER_CLEANER_INTERVAL_MS":         {&cleanerMS, 1000},
		// 0: no cap.
		"TETHER_MAX_WAITS_PER_IDENTITY": {&waitsIdentity, api.DefaultWaitsPerIdentity},
		"TETHER_MAX_WAITS_PER_TENANT":   {&waitsTenant, api.DefaultWaitsPerTenant},
		"TETHER_BLOB_MAX_BYTES":         {&blobMax, 32 << 20},
		"TETHER_BLOB_GRACE_MS":          {&blobGraceMS, 3600000},
		"TETHER_BLOB_QUOTA_BYTES":       {&blobQuota, tenancy.DefaultBlobQuotaBytes},
		"TETHER_RETRY_INITIAL_MS":       {&retryInitialMS, 5000},
		"TETHER_RETRY_MAX_MS":           {&retryMaxMS, 600000},
		// 0: no cap.
		"TETHER_MCP_MAX_SESSIONS":              {&mcpSessions, mcp.DefaultMaxSessions},
		"TETHER_MCP_MAX_SESSIONS_PER_IDENTITY": {&mcpSessionsIdentity, mcp.DefaultMaxSessionsPerIdentity},
		"TETHER_MCP_SESSION_IDLE_MS":           {&mcpIdleMS, mcp.DefaultSessionTimeout.Milliseconds()},
		"TETHER_METRICS_MAX_TENANTS":           {&metricsTenants, queuemetrics.DefaultMaxTenants},
		"TETHER_METRICS_MAX_QUEUES":            {&metricsQueues, queuemetrics.DefaultMaxQueues},
	} {
		v, err := envflag.Int(name, spec.def)
		if err != nil {
			return s, err
		}
		*spec.dst = v
	}
	switch {
	case ttlDefault < 1000 || ttlMax < 1000:
		return s, fmt.Errorf("TETHER_CLAIM_TTL_DEFAULT_MS and TETHER_CLAIM_TTL_MAX_MS must be at least 1000")
	case ttlDefault > ttlMax:
		return s, fmt.Errorf("TETHER_CLAIM_TTL_DEFAULT_MS (%d) is above TETHER_CLAIM_TTL_MAX_MS (%d)", ttlDefault, ttlMax)
	case ttlMax > ttlCeiling:
		return s, fmt.Errorf("TETHER_CLAIM_TTL_MAX_MS (%d) is above TETHER_CLAIM_TTL_CEILING_MS (%d)", ttlMax, ttlCeiling)
	case ttlCeiling > duration.MaxMS:
		return s, fmt.Errorf("TETHER_CLAIM_TTL_CEILING_MS (%d) is above the longest duration, %d", ttlCeiling, duration.MaxMS)
	case maxAttempts < 1:
		return s, fmt.Errorf("TETHER_MAX_ATTEMPTS must be at least 1")
	case reaperMS < 1:
		return s, fmt.Errorf("TETHER_REAPER_INTERVAL_MS must be at least 1")
	case maxBody < 1:
		return s, fmt.Errorf("TETHER_MAX_BODY_BYTES must be at least 1")
	case workerStaleMS < 1:
		return s, fmt.Errorf("TETHER_WORKER_STALE_MS must be at least 1")
	case workerOfflineMS < 1 || workerOfflineMS > maxWorkerOfflineMS:
		return s, fmt.Errorf("TETHER_WORKER_OFFLINE_RETENTION_MS must be from 1 to %d (a day: no worker is kept longer)", int64(maxWorkerOfflineMS))
	case workersIdentity < 1 || workersTenant < 1 || workersIdentity > 1<<20 || workersTenant > 1<<20:
		return s, fmt.Errorf("TETHER_WORKER_MAX_PER_IDENTITY and TETHER_WORKER_MAX_PER_TENANT must be from 1 to %d", 1<<20)
	case waitsIdentity < 0 || waitsTenant < 0 || waitsIdentity > 1<<20 || waitsTenant > 1<<20:
		return s, fmt.Errorf("TETHER_MAX_WAITS_PER_IDENTITY and TETHER_MAX_WAITS_PER_TENANT must be from 0 (no cap) to %d", 1<<20)
	case retentionMS != 0 && (retentionMS < tenancy.MinRetentionMS || retentionMS > tenancy.MaxRetentionMS):
		return s, fmt.Errorf("TETHER_RETENTION_MS must be 0 (keep forever) or from %d to %d", tenancy.MinRetentionMS, int64(tenancy.MaxRetentionMS))
	case cleanerMS < 1:
		return s, fmt.Errorf("TETHER_CLEANER_INTERVAL_MS must be at least 1")
	case blobMax < 1:
		return s, fmt.Errorf("TETHER_BLOB_MAX_BYTES must be at least 1")
	case metricsTenants < 1 || metricsQueues < 1 || metricsTenants > maxMetricsLabels || metricsQueues > maxMetricsLabels:
		return s, fmt.Errorf("TETHER_METRICS_MAX_TENANTS and TETHER_METRICS_MAX_QUEUES must be from 1 to %d", maxMetricsLabels)
	case blobGraceMS < 1 || blobGraceMS > maxBlobGraceMS:
		return s, fmt.Errorf("TETHER_BLOB_GRACE_MS must be between 1 and %d", int64(maxBlobGraceMS))
	case mcpSessions > 1<<20 || mcpSessionsIdentity > 1<<20:
		return s, fmt.Errorf("TETHER_MCP_MAX_SESSIONS and TETHER_MCP_MAX_SESSIONS_PER_IDENTITY must be from 0 (no cap) to %d", 1<<20)
	case mcpIdleMS < 1000 || mcpIdleMS > maxMCPIdleMS:
		return s, fmt.Errorf("TETHER_MCP_SESSION_IDLE_MS must be from 1000 to %d (a day)", int64(maxMCPIdleMS))
	}
	origins := envflag.List("TETHER_MCP_ALLOWED_ORIGINS")
	if err := mcp.ParseAllowedOrigins(origins); err != nil {
		return s, fmt.Errorf("TETHER_MCP_ALLOWED_ORIGINS: %w", err)
	}
	s.MCP = mcp.HTTPOptions{
		AllowedOrigins: origins, SessionTimeout: time.Duration(mcpIdleMS) * time.Millisecond,
		MaxSessions: noCapIfZero(mcpSessions), MaxSessionsPerIdentity: noCapIfZero(mcpSessionsIdentity),
	}
	if retentionMS == 0 {
		retentionMS = -1 // the tenancy package's "keep forever"
	}
	switch {
	case retryInitialMS < 0 || retryInitialMS > duration.MaxMS || retryMaxMS < 0 || retryMaxMS > duration.MaxMS:
		return s, fmt.Errorf("TETHER_RETRY_INITIAL_MS and TETHER_RETRY_MAX_MS must be from 0 to %d", int64(duration.MaxMS))
	case retryMaxMS < retryInitialMS:
		return s, fmt.Errorf("TETHER_RETRY_MAX_MS must be at least TETHER_RETRY_INITIAL_MS")
	case retryInitialMS == 0:
		retryInitialMS = -1 // the tenancy package's "no backoff"
	}
	keys, err := tenancy.ParsePublicKeys(os.Getenv("TETHER_JWT_PUBLIC_KEYS"))
	if err != nil {
		return s, fmt.Errorf("TETHER_JWT_PUBLIC_KEYS: %w", err)
	}
	s.Server = server.Config{
		Config: core.Config{
			ReaperInterval:         time.Duration(reaperMS) * time.Millisecond,
			WorkerStaleAfter:       time.Duration(workerStaleMS) * time.Millisecond,
			WorkerOfflineRetention: time.Duration(workerOfflineMS) * time.Millisecond,
			WorkerMaxPerIdentity:   int(workersIdentity),
			WorkerMaxPerTenant:     int(workersTenant),
			BlobMaxBytes:           blobMax,
			BlobGrace:              time.Duration(blobGraceMS) * time.Millisecond,
			CleanerInterval:        time.Duration(cleanerMS) * time.Millisecond,
			Tenant: tenancy.Config{
				JWTSecrets:      envflag.List("TETHER_JWT_SECRET"),
				PublicKeys:      keys,
				Issuer:          os.Getenv("TETHER_JWT_ISSUER"),
				Audience:        os.Getenv("TETHER_JWT_AUDIENCE"),
				HeadTokens:      envflag.List("HEAD_TOKEN", "HEAD_TOKENS"),
				LeftClawTokens:  envflag.List("LEFT_CLAW_TOKEN", "LEFT_CLAW_TOKENS"),
				RightClawTokens: envflag.List("RIGHT_CLAW_TOKEN", "RIGHT_CLAW_TOKENS"),
				TTLCeilingMS:    ttlCeiling,
				Defaults: tenancy.Policy{
					ClaimTTLDefaultMS:  ttlDefault,
					ClaimTTLMaxMS:      ttlMax,
					MaxAttemptsDefault: maxAttempts,
					RetentionMS:        retentionMS,
					BlobQuotaBytes:     blobQuota,
					RetryInitialMS:     retryInitialMS,
					RetryMaxMS:         retryMaxMS,
				},
			},
		},
		MaxBodyBytes:   maxBody,
		Waits:          api.WaitLimits{PerIdentity: noCapIfZero(waitsIdentity), PerTenant: noCapIfZero(waitsTenant)},
		SkillMDPath:    os.Getenv("TETHER_SKILL_MD_PATH"),
		OperatorTokens: envflag.List("TETHER_OPERATOR_TOKENS"),
		MetricsTokens:  envflag.List("TETHER_METRICS_TOKENS"),
		QueueMetrics:   queuemetrics.Limits{MaxTenants: int(metricsTenants), MaxQueues: int(metricsQueues)},
	}
	return s, nil
}

// noCapIfZero maps a setting's 0 ("no cap") to api.WaitLimits' negative.
func noCapIfZero(v int64) int {
	if v == 0 {
		return -1
	}
	return int(v)
}
