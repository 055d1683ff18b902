package runner

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/traceparent"
)

// TestRunSpanLinksToTheCreatingRequest: a run's span starts a trace of its
// own, linked to the trace context its node carries, and the handler's
// context carries it (a command gets it as TRACEPARENT); without a tracer
// nothing changes.
func TestRunSpanLinksToTheCreatingRequest(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	const created = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	c := &hold{lease: client.Lease{NodeID: "n1", Fence: 3}, traceparent: created}

	off := &slot{r: &Runner{cfg: Config{Queue: "q"}}, name: "host-1-1"}
	ctx, span := off.startRun(context.Background(), c)
	endRun(span, nil)
	require.False(t, span.IsRecording())
	require.Empty(t, traceparent.Of(ctx), "tracing off: no trace context for the handler")

	on := &slot{r: &Runner{cfg: Config{Queue: "q", Tracer: tp.Tracer("test")}}, name: "host-1-1"}
	ctx, span = on.startRun(context.Background(), c)
	handlerSees := traceparent.Of(ctx)
	endRun(span, errors.New("the command ended: exit status 3"))
	spans := exp.GetSpans()
	require.Len(t, spans, 1)
	run := spans[0]
	require.Equal(t, runSpanName, run.Name)
	want, _ := traceparent.Parse(created)
	require.Len(t, run.Links, 1)
	require.Equal(t, want.TraceID(), run.Links[0].SpanContext.TraceID())
	require.Equal(t, want.SpanID(), run.Links[0].SpanContext.SpanID())
	require.False(t, run.Parent.IsValid(), "the run is a trace of its own, linked, not a child")
	require.NotEqual(t, want.TraceID(), run.SpanContext.TraceID())
	require.Equal(t, "the command ended: exit status 3", run.Status.Description)
	require.Equal(t, "00-"+run.SpanContext.TraceID().String()+"-"+run.SpanContext.SpanID().String()+"-01", handlerSees)
}

// TestTraceparentIsTheNodesField: the run links to the node's traceparent
// field; a prop of that name is the user's own data and links nothing.
func TestTraceparentIsTheNodesField(t *testing.T) {
	t.Parallel()
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	require.Equal(t, tp, traceparentOf(client.Node{Traceparent: ptrTo(tp)}))
	require.Empty(t, traceparentOf(client.Node{Props: map[string]any{"traceparent": tp}}))
}
