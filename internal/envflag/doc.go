// Package envflag reads settings the way every tether command does: a flag
// given on the command line wins over its environment variable, which wins
// over the default. It holds the small helpers the CLI (internal/cli) and
// the server's configuration (internal/serve) share, so that neither imports
// the other.
//
// Invariants:
//   - A variable that is set but empty counts as unset: String and Int
//     return the default, List skips it.
//   - Nothing here keeps state; every call reads the environment afresh.
package envflag
