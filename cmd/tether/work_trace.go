package main

// Traces of the runner (package internal/tracing): with tracing on, each
// run is a span of its own trace, linked to the request that created its
// node (the node's props.traceparent, which the claim returned), and the
// command gets the run's context as TRACEPARENT so its own spans join it.

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/tracing"
)

// runSpanName names a run's span.
const runSpanName = "tether.work.run"

// traceparentOf is the trace context a claimed node carries ("" for none).
func traceparentOf(n client.Node) string {
	tp, _ := n.Props[tracing.Prop].(string)
	return tp
}

// startRun starts c's span; without a tracer it is a span that records
// nothing, and env is unchanged.
func (s *workSlot) startRun(c *workClaim, env []string) (trace.Span, []string) {
	if s.r.tracer == nil {
		return noop.Span{}, env
	}
	opts := []trace.SpanStartOption{
		trace.WithNewRoot(),
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(
			attribute.String("tether.node.id", c.lease.NodeID),
			attribute.Int64("tether.lease.fence", c.lease.Fence),
			attribute.String("tether.queue", s.r.opts.queue),
			attribute.String("tether.worker", s.name),
		),
	}
	if sc, ok := tracing.SpanContext(c.traceparent); ok {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{attribute.String("tether.link", "created_by")}}))
	}
	ctx, span := s.r.tracer.Start(context.Background(), runSpanName, opts...)
	if tp := tracing.Traceparent(ctx); tp != "" {
		env = append(env, "TRACEPARENT="+tp)
	}
	return span, env
}

// endRun ends a run's span with how the command ended.
func endRun(span trace.Span, x workExit) {
	if !span.IsRecording() {
		span.End()
		return
	}
	span.SetAttributes(attribute.Int("process.exit.code", x.code), attribute.Bool("tether.run.stopped", x.stopped))
	if x.err != nil || x.code != 0 {
		span.SetStatus(codes.Error, x.how)
	}
	span.End()
}
