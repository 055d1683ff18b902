package graphstore

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Tracing a write (package internal/tracing says what is traced). The
// writer batches many requests' writes into one commit and one sync, so no
// span can be the commit of one request; each traced write gets a child
// span of its own request covering what that request waited for: its turn
// on the writer, the commit it shared, and the sync that made it durable.
// Untraced (no recording span in ctx, as always with tracing off), a write
// costs one context lookup more.

// commitSpanName is the name of a write's span.
const commitSpanName = "tether.store.commit"

// tracedUpdate runs update(ctx, fn) inside a child span of ctx's recording
// span.
func (s *Store) tracedUpdate(ctx context.Context, parent trace.Span, mode string, update func(context.Context, func(*Tx) error) error, fn func(*Tx) error) error {
	ctx, span := parent.TracerProvider().Tracer("github.com/tether-run/tether/internal/graphstore").Start(ctx, commitSpanName,
		trace.WithAttributes(attribute.String("tether.store.mode", mode)))
	defer span.End()
	err := update(ctx, fn)
	if err != nil {
		span.SetStatus(codes.Error, "write not committed")
	}
	return err
}
