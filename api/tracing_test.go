package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/server"
	"github.com/tether-run/tether/internal/traceparent"
)

// withTraceparent sends ctx's span context as the W3C traceparent header.
func withTraceparent(ctx context.Context) client.RequestEditorFn {
	return func(_ context.Context, req *http.Request) error {
		propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
		return nil
	}
}

// TestTracing: with a tracer, a request is a server span under the caller's
// traceparent, its write a child span, and the node it creates keeps the
// request's trace context, which the claim returns.
func TestTracing(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	e := start(t, func(c *server.Config) { c.Tracer = tp })
	ctx := context.Background()

	callerCtx, caller := tp.Tracer("test").Start(ctx, "caller")
	res, err := e.dispatcher().CreateNodeWithResponse(ctx, nil, client.NodeCreate{ID: ptr("traced"), Type: "task", Queue: ptr("tq")}, withTraceparent(callerCtx))
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.StatusCode(), string(res.Body))
	caller.End()

	var server, commit tracetest.SpanStub
	require.Eventually(t, func() bool {
		server, commit = tracetest.SpanStub{}, tracetest.SpanStub{}
		for _, s := range exp.GetSpans() {
			switch s.Name {
			case "POST /v1/nodes":
				server = s
			case "tether.store.commit":
				commit = s
			}
		}
		return server.Name != "" && commit.Name != ""
	}, 5*time.Second, 5*time.Millisecond, "a server span and a commit span: %v", exp.GetSpans())
	require.Equal(t, trace.SpanKindServer, server.SpanKind)
	require.Equal(t, caller.SpanContext().TraceID(), server.SpanContext.TraceID(), "the request joins the caller's trace")
	require.Equal(t, caller.SpanContext().SpanID(), server.Parent.SpanID())
	require.Equal(t, server.SpanContext.SpanID(), commit.Parent.SpanID(), "the write's wait for its commit is a child of the request")
	require.Equal(t, server.SpanContext.TraceID(), commit.SpanContext.TraceID())

	want := "00-" + server.SpanContext.TraceID().String() + "-" + server.SpanContext.SpanID().String() + "-01"
	require.Equal(t, ptr(want), res.JSON201.Traceparent, "the node keeps the creating request's trace context")
	require.Empty(t, res.JSON201.Props, "in a field of its own, not in the caller's props")

	claim, err := e.user("alice").ClaimNextWithResponse(ctx, "tq", client.ClaimNextRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, claim.StatusCode(), string(claim.Body))
	require.Equal(t, ptr(want), claim.JSON200.Node.Traceparent, "a claim returns it, for the run to link to")
	got, err := e.dispatcher().GetNodeWithResponse(ctx, "traced")
	require.NoError(t, err)
	require.Equal(t, ptr(want), got.JSON200.Traceparent)
	sc, ok := traceparent.Parse(want)
	require.True(t, ok)
	require.Equal(t, server.SpanContext.SpanID(), sc.SpanID())

	// A caller's own traceparent prop is user data: kept as given, beside
	// the server's field.
	own := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	mine, err := e.dispatcher().CreateNodeWithResponse(ctx, nil, client.NodeCreate{Type: "task", Props: &map[string]any{"traceparent": own}}, withTraceparent(callerCtx))
	require.NoError(t, err)
	require.Equal(t, map[string]any{"traceparent": own}, mine.JSON201.Props)
	require.NotNil(t, mine.JSON201.Traceparent)
	require.NotEqual(t, own, *mine.JSON201.Traceparent)
}

// TestTracingOff: without a tracer a traceparent header changes nothing.
func TestTracingOff(t *testing.T) {
	t.Parallel()
	e := start(t)
	tp := sdktrace.NewTracerProvider()
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	callerCtx, caller := tp.Tracer("test").Start(context.Background(), "caller")
	defer caller.End()
	res, err := e.dispatcher().CreateNodeWithResponse(context.Background(), nil, client.NodeCreate{Type: "task"}, withTraceparent(callerCtx))
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.StatusCode(), string(res.Body))
	require.Nil(t, res.JSON201.Traceparent)
	require.NotContains(t, string(res.Body), "traceparent")
}
