package version

import (
	"runtime"
	"runtime/debug"
	"sync"
)

// override is set by -ldflags -X for release builds.
var override string

// Info is what a build knows about itself.
type Info struct {
	Version   string // v1.2.3, a revision (12 hex digits, maybe +dirty), or dev
	Revision  string // the full VCS revision, "" when unknown
	GoVersion string
}

var get = sync.OnceValue(func() Info {
	info := Info{Version: override, GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		if info.Version == "" {
			info.Version = "dev"
		}
		return info
	}
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	switch {
	case info.Version != "":
	case bi.Main.Version != "" && bi.Main.Version != "(devel)":
		info.Version = bi.Main.Version
	case info.Revision != "":
		info.Version = info.Revision[:min(12, len(info.Revision))]
		if dirty {
			info.Version += "+dirty"
		}
	default:
		info.Version = "dev"
	}
	return info
})

// Get returns this build's Info.
func Get() Info { return get() }

// String is this build's version.
func String() string { return get().Version }
