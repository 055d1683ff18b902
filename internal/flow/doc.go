// Package flow holds the rules of flow control at claim time that do not
// need the store: what a concurrency key is, what a limit, a start rate and
// a usage budget may be, and the token bucket and budget window arithmetic.
// The store (graphstore) keeps the configuration and the running counts and
// applies these rules inside the claim's write.
//
// Invariants:
//   - A concurrency key is 1-256 bytes of valid UTF-8 without control
//     characters; a node carries at most MaxKeys, each once, in the order
//     first given. A key ending in '*' is a prefix and only names limits.
//   - A limit is at least 1; a rate is finite, per_second in
//     [MinPerSecond, MaxPerSecond], burst in [1, MaxBurst]. Every bad value
//     is a fault.Invalid naming its field, found before anything is written.
//   - A bucket never holds more than its burst and starts empty, so the
//     grants in any window of w seconds are at most per_second*w + burst,
//     a restart included (a restarted server's buckets start empty).
//   - A budget window is fixed: [k*window, (k+1)*window) after the Unix
//     epoch, so every server computes the same window for an instant.
package flow
