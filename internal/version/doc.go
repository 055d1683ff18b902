// Package version says which build of Tether is running: the version of the
// main module (a tag such as v1.2.3, a Go pseudo-version such as
// v0.0.0-20261128054012-df012be0a1b2, or "dev" for a build from a source
// tree, which is what `go run` makes) and, separately, the VCS commit it was
// built from and whether the tree had uncommitted changes.
//
// The commit comes from the go command's VCS stamp (vcs.revision,
// vcs.modified), which `go build` writes when it can and `go run` never
// does; the Makefile's builds (make build, install, run) pass it outright,
// so every build made through make names its commit:
//
//	-ldflags "-X github.com/tether-run/tether/internal/version.commit=SHA
//	          -X github.com/tether-run/tether/internal/version.modified=true"
//
// A release build may set the version too with
// -X github.com/tether-run/tether/internal/version.override=v1.2.3.
//
// Invariants:
//   - Version never returns "": a build always names itself.
//   - The answer is computed once and does not change while the process runs.
package version
