// Package testskip skips a test that needs something this machine lacks (a
// program such as chromium or etcd, FUSE) and records why, so that `make
// test`, which needs only Go and gcc, can end with one line saying what it
// skipped instead of leaving the reader to find the SKIP lines in its output.
//
// A test calls Programs (every named program on PATH) or Missing (a need it
// checked itself). Each skip appends one line, "what<TAB>why<TAB>test", to
// the file named by TETHER_TEST_SKIPS when that is set (test binaries of
// several packages run at once: each line is one O_APPEND write, which the
// kernel keeps whole), and .ci/skip-summary.awk turns the file into the
// summary. Without TETHER_TEST_SKIPS a skip is only go test's SKIP line.
//
// Invariant: a test skipped through this package is always recorded when
// TETHER_TEST_SKIPS is set; recording never fails the test.
package testskip
