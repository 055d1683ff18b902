package version

import (
	"runtime"
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
