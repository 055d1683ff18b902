// Package serve is `tether serve`: the server's configuration and its
// process. It reads every setting (flags over TETHER_* variables over
// defaults, the table in docs/configuration.md), checks them, builds
// server.Config, and serves on the Badger store in a data directory or, with
// TETHER_STORE=etcd, as one server of a cluster (internal/cluster) until
// SIGTERM or SIGINT, then drains.
//
// Invariants:
//   - A bad setting is refused before anything is opened or listened on,
//     with an error that names the variable.
//   - docs/configuration.md lists exactly the variables the binary reads, each
//     serve flag names its variable, and each literal default there is the
//     code's (TestConfigurationDoc).
//   - A first signal drains (the server's Shutdown, within 30 s); a second
//     one exits at once.
//   - GOMAXPROCS gets one spare P beyond the CPUs on the Badger store, after
//     the rebuild, unless the GOMAXPROCS variable chose a number (procs.go).
package serve
