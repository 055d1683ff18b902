package version

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestVersionNamesTheBuild(t *testing.T) {
	info := Get()
	if info.Version == "" || String() != info.Version {
		t.Fatalf("version %q / %q", info.Version, String())
	}
	if info.GoVersion != runtime.Version() {
		t.Errorf("go version %q", info.GoVersion)
	}
	if Get() != info {
		t.Error("the answer changed")
	}
}

func TestInfoGivesVersionAndCommitApart(t *testing.T) {
	const sha = "df012be0a1b2c3d4e5f60718293a4b5c6d7e8f90"
	stamped := &debug.BuildInfo{
		Main:     debug.Module{Version: "v0.0.0-20261128054012-df012be0a1b2"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: sha}, {Key: "vcs.modified", Value: "true"}},
	}
	devel := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}
	for _, tc := range []struct {
		name                     string
		bi                       *debug.BuildInfo
		override, commit, dirty  string
		wantVersion, wantSummary string
	}{
		{"go build, stamped", stamped, "", "", "", "v0.0.0-20261128054012-df012be0a1b2", "v0.0.0-20261128054012-df012be0a1b2 (commit df012be0a1b2, modified)"},
		{"go run, no stamp", devel, "", "", "", "dev", "dev (commit unknown)"},
		{"go run through make", devel, "", sha, "false", "dev", "dev (commit df012be0a1b2)"},
		{"ldflags win over the stamp", stamped, "v1.2.3", "abc", "false", "v1.2.3", "v1.2.3 (commit abc)"},
		{"no build info", nil, "", "", "", "dev", "dev (commit unknown)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := infoFrom(tc.bi, tc.override, tc.commit, tc.dirty)
			if got.Version != tc.wantVersion || got.Summary() != tc.wantSummary {
				t.Errorf("got %q / %q, want %q / %q", got.Version, got.Summary(), tc.wantVersion, tc.wantSummary)
			}
		})
	}
}
