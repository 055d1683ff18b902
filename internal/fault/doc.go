// Package fault holds the error kinds every domain package returns and the api
// package translates to problem+json in exactly one place.
//
// Invariants:
//   - It imports nothing of ours: it is the leaf every other package may use.
//   - A kind says what went wrong in domain terms (not found, lease lost, ...);
//     HTTP statuses and problem codes are decided only by the api package.
//   - Error text may reach a client, so it never carries internal detail
//     (file paths, storage errors): those are wrapped errors of other types and
//     become a generic 500.
package fault
