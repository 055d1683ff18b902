// Package traceparent converts between a context's span and its W3C trace
// context (a traceparent string), which Tether keeps on each node a traced
// request creates and hands to the run that claims it.
//
// It depends on OpenTelemetry's trace API and propagators only, never on an
// SDK or exporter, so a program that embeds the runner links no gRPC
// (package internal/tracing sets up the exporter, for the server and
// `tether work`).
package traceparent

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Of is ctx's span context as a W3C traceparent ("" when ctx has no valid
// one).
func Of(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c["traceparent"]
}

// Parse reads a W3C traceparent; false when it is not a valid one.
func Parse(traceparent string) (trace.SpanContext, bool) {
	if traceparent == "" {
		return trace.SpanContext{}, false
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": traceparent})
	sc := trace.SpanContextFromContext(ctx)
	return sc, sc.IsValid()
}
