// Package pgtest gives tests a real PostgreSQL: URL hands each test a fresh,
// empty database of its own, and Start a whole server of its own that the
// test may kill -9 and restart.
//
// Where the databases come from:
//   - TETHER_TEST_POSTGRES_URL set: a server someone runs (CI's service, a
//     developer's own); URL creates a database with a random name on it and
//     drops it when the test ends.
//   - otherwise: one server per test binary, started on first use from the
//     PostgreSQL programs under /usr/lib/postgresql/*/bin (Debian's layout;
//     the newest version found) in a temporary directory, on a free loopback
//     port, shared by the package's tests, each in a database of its own.
//     Without those programs the test is skipped through internal/testskip.
//
// A package that calls URL runs its tests through Main (or Run) from its
// TestMain: that stops the shared server and removes its directory when the
// tests end. URL fails a test whose package does not, rather than leave a
// server behind.
//
// Invariants:
//   - Every server runs with fsync on (PostgreSQL's default, kept): what a
//     test proves about durability holds for a real deployment.
//   - A server started here dies with the test binary: it runs as a child
//     with a parent-death signal (SIGKILL), started from a thread kept for
//     it, so even a test binary killed by a timeout leaves no server
//     running. Kill kills the server and every backend at once, as a crash
//     of the machine would. The directory such a binary leaves
//     is removed by the next one that starts a shared server, once it has
//     been quiet for ten minutes with no server running in it.
//   - PostgreSQL refuses to run as root: as root, the programs run as the
//     postgres user (its uid and gid set on the process, as runuser would),
//     and the server's directory belongs to that user.
//   - Every test gets a database of its own, so tests never see each other's
//     tables, on a shared server or an external one.
package pgtest
