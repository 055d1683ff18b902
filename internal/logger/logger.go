// Package logger holds the one default every package applies to the
// *slog.Logger it is given: none means discard, never a nil dereference and
// never output a caller did not ask for.
package logger

import "log/slog"

// OrDiscard returns l, or a logger that discards everything when l is nil.
func OrDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}
