package main

import (
	"context"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/tracing"
)

// TestWorkRunSpanLinksToTheCreatingRequest: a run's span starts a trace of
// its own, linked to the trace context its node carries, and the command
// gets the run's context as TRACEPARENT; without a tracer nothing changes.
func TestWorkRunSpanLinksToTheCreatingRequest(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	const created = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	c := &workClaim{lease: client.Lease{NodeID: "n1", Fence: 3}, traceparent: created}

	off := &workSlot{r: &workRunner{opts: workOptions{queue: "q"}}, name: "host-1-1"}
	span, env := off.startRun(c, []string{"A=1"})
	endRun(span, workExit{})
	if len(env) != 1 || span.IsRecording() {
		t.Fatalf("tracing off: env %v, recording %v", env, span.IsRecording())
	}

	on := &workSlot{r: &workRunner{opts: workOptions{queue: "q"}, tracer: tp.Tracer("test")}, name: "host-1-1"}
	span, env = on.startRun(c, []string{"A=1"})
	endRun(span, workExit{code: 3, how: "exit status 3"})
	spans := exp.GetSpans()
	if len(spans) != 1 || spans[0].Name != runSpanName {
		t.Fatalf("spans: %v", spans)
	}
	run := spans[0]
	want, _ := tracing.SpanContext(created)
	if len(run.Links) != 1 || run.Links[0].SpanContext.SpanID() != want.SpanID() || run.Links[0].SpanContext.TraceID() != want.TraceID() {
		t.Fatalf("links %v, want one to %v", run.Links, want)
	}
	if run.Parent.IsValid() || run.SpanContext.TraceID() == want.TraceID() {
		t.Fatalf("the run is a trace of its own, linked, not a child: parent %v", run.Parent)
	}
	if run.Status.Description != "exit status 3" {
		t.Fatalf("status %v", run.Status)
	}
	tpEnv := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "TRACEPARENT="); ok {
			tpEnv = v
		}
	}
	if tpEnv != "00-"+run.SpanContext.TraceID().String()+"-"+run.SpanContext.SpanID().String()+"-01" {
		t.Fatalf("TRACEPARENT %q for the run %v", tpEnv, run.SpanContext)
	}
}
