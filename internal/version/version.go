package version

import (
	"runtime"
	"runtime/debug"
	"sync"
)

// Set by -ldflags -X (see the package comment).
var (
	override string // the version, for release builds
	commit   string // the VCS commit (make passes git rev-parse HEAD)
	modified string // "true" when the tree had uncommitted changes
)

// Info is what a build knows about itself.
type Info struct {
	Version   string // v1.2.3, a pseudo-version, or dev
	Commit    string // the full VCS commit, "" when unknown
	Modified  bool   // the tree had uncommitted changes at build time
	GoVersion string
}

var get = sync.OnceValue(func() Info {
	bi, _ := debug.ReadBuildInfo()
	return infoFrom(bi, override, commit, modified)
})

// infoFrom decides a build's Info from its build info (nil when there is
// none) and the values -ldflags set, which win.
func infoFrom(bi *debug.BuildInfo, override, commit, modified string) Info {
	info := Info{Version: override, Commit: commit, Modified: modified == "true", GoVersion: runtime.Version()}
	if bi != nil {
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && commit == "":
				info.Commit = s.Value
			case s.Key == "vcs.modified" && modified == "":
				info.Modified = s.Value == "true"
			}
		}
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
	}
	if info.Version == "" {
		info.Version = "dev"
	}
	return info
}

// Get returns this build's Info.
func Get() Info { return get() }

// String is this build's version.
func String() string { return get().Version }

// Summary is the version with the commit, one line for people and logs:
// "v1.2.3 (commit df012be0a1b2)", "dev (commit df012be0a1b2, modified)",
// "dev (commit unknown)".
func (i Info) Summary() string {
	switch {
	case i.Commit == "":
		return i.Version + " (commit unknown)"
	case i.Modified:
		return i.Version + " (commit " + i.ShortCommit() + ", modified)"
	}
	return i.Version + " (commit " + i.ShortCommit() + ")"
}

// ShortCommit is the commit's first 12 hex digits ("" when unknown).
func (i Info) ShortCommit() string { return i.Commit[:min(12, len(i.Commit))] }
