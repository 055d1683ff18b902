// Package etcdtest starts a real etcd cluster for tests: members embedded in
// the test process (go.etcd.io/etcd/server/v3/embed) on loopback ports, each
// in a temporary directory, which a test may kill and restart to prove what
// Tether does when a member or a quorum is lost. TETHER_TEST_ETCD names an
// external cluster to use instead (its client URLs, comma-separated); tests
// that kill members then skip.
//
// StartProcesses runs the members instead as processes of the etcd program,
// each where the test places it (a network namespace of internal/netfault,
// with an address of its own), so that a test can cut members off from
// each other; Kill and Restart then kill and start the processes.
//
// Invariants:
//   - Every cluster is stopped when its test ends (a member process is
//     killed, and its log shown if the test failed).
//   - Every test gets a key prefix of its own, so tests never see each other's
//     keys on a shared cluster.
package etcdtest
