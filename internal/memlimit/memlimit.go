package memlimit

import (
	"fmt"
	"log/slog"
	"math"
	"runtime/debug"
)

// CgroupShare is the part of a cgroup's memory limit the heap may use
// before the GC works harder: the rest is for what the Go runtime does not
// count (thread stacks outside the heap, the kernel's page tables, memory
// mapped files).
const CgroupShare = 0.9

// MinLimit is the smallest limit a setting may ask for: below it the GC
// would run without pause on any server's live heap.
const MinLimit = 32 << 20

// Source says where a Choice came from.
type Source string

// The sources of a Choice, in the order Decide tries them.
const (
	FromSetting    Source = "setting"    // TETHER_MEMORY_LIMIT or --memory-limit
	FromGOMEMLIMIT Source = "GOMEMLIMIT" // applied by the Go runtime itself
	FromCgroup     Source = "cgroup"     // CgroupShare of the cgroup's limit
	FromNone       Source = "none"       // no limit anywhere
)

// Choice is the soft memory limit the server runs with.
type Choice struct {
	Bytes  int64 // 0: no limit
	Source Source
	// Cgroup is the cgroup's limit and the file it was read from, when
	// one was read.
	CgroupBytes int64
	CgroupFile  string
	// CgroupErr is why the cgroup could not be read (then there is no
	// limit from it); the server logs it and runs on.
	CgroupErr error
}

// Decide chooses the limit (see the package doc): setting first (empty:
// not set), then GOMEMLIMIT when goMemLimit is not empty, then the cgroup
// read under root. Only a malformed or too small setting is an error.
func Decide(setting, goMemLimit, root string) (Choice, error) {
	if setting != "" {
		n, err := ParseSize(setting)
		if err != nil {
			return Choice{}, err
		}
		if n != 0 && n < MinLimit {
			return Choice{}, fmt.Errorf("%q is below the smallest limit, %s (0 or off: no limit)", setting, FormatSize(MinLimit))
		}
		return Choice{Bytes: n, Source: FromSetting}, nil
	}
	if goMemLimit != "" {
		// The runtime parsed and applied it (and refused to start had it
		// been malformed); this only reports it.
		n := debug.SetMemoryLimit(-1)
		if n == math.MaxInt64 {
			n = 0
		}
		return Choice{Bytes: n, Source: FromGOMEMLIMIT}, nil
	}
	limit, file, err := CgroupLimit(root)
	c := Choice{Source: FromNone, CgroupBytes: limit, CgroupFile: file, CgroupErr: err}
	if err == nil && limit > 0 {
		c.Bytes, c.Source = int64(float64(limit)*CgroupShare), FromCgroup
	}
	return c, nil
}

// Apply sets the runtime's soft memory limit to the choice: no limit is
// math.MaxInt64, the runtime's own "none" (which lifts a GOMEMLIMIT when
// the setting said off).
func (c Choice) Apply() {
	if c.Source == FromGOMEMLIMIT {
		return
	}
	if c.Bytes == 0 {
		debug.SetMemoryLimit(math.MaxInt64)
		return
	}
	debug.SetMemoryLimit(c.Bytes)
}

// LogAttrs describe the choice for the start-up log.
func (c Choice) LogAttrs() []any {
	attrs := []any{slog.String("source", string(c.Source))}
	if c.Bytes > 0 {
		attrs = append(attrs, slog.String("limit", FormatSize(c.Bytes)), slog.Int64("limit_bytes", c.Bytes))
	} else {
		attrs = append(attrs, slog.String("limit", "none"))
	}
	if c.CgroupBytes > 0 {
		attrs = append(attrs, slog.String("cgroup_limit", FormatSize(c.CgroupBytes)), slog.String("cgroup_file", c.CgroupFile))
	}
	if c.CgroupErr != nil {
		attrs = append(attrs, slog.String("cgroup_error", c.CgroupErr.Error()))
	}
	return attrs
}
