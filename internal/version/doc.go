// Package version says which build of Tether is running: the version of the
// main module when it was built from a tagged module, else the VCS revision
// the go command stamped (with "+dirty" for modified sources), else "dev".
// A release build may set it outright with
// -ldflags "-X github.com/tether-run/tether/internal/version.override=v1.2.3".
//
// Invariants:
//   - String never returns "": a build always names itself.
//   - The answer is computed once and does not change while the process runs.
package version
