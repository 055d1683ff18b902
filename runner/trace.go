package runner

// Traces of the runner: with a tracer, each run is a span of its own trace,
// linked to the request that created its node (the node's traceparent,
// which the claim returned); the handler's
// context carries the span, and a command gets it as TRACEPARENT, so that
// their own spans join it.

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/traceparent"
)

// runSpanName names a run's span.
const runSpanName = "tether.work.run"

// traceparentOf is the trace context a claimed node carries ("" for none).
func traceparentOf(n client.Node) string {
	if n.Traceparent == nil {
		return ""
	}
	return *n.Traceparent
}

// startRun starts c's span in ctx; without a tracer it is a span that
// records nothing, and ctx is unchanged.
func (s *slot) startRun(ctx context.Context, c *hold) (context.Context, trace.Span) {
	if s.r.cfg.Tracer == nil {
		return ctx, noop.Span{}
	}
	opts := []trace.SpanStartOption{
		trace.WithNewRoot(),
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(
			attribute.String("tether.node.id", c.lease.NodeID),
			attribute.Int64("tether.lease.fence", c.lease.Fence),
			attribute.String("tether.queue", s.r.cfg.Queue),
			attribute.String("tether.worker", s.name),
		),
	}
	if sc, ok := traceparent.Parse(c.traceparent); ok {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{attribute.String("tether.link", "created_by")}}))
	}
	return s.r.cfg.Tracer.Start(ctx, runSpanName, opts...)
}

// endRun ends a run's span with how the handler ended: an error is the
// span's status.
func endRun(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
