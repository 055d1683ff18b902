package traceparent

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"
)

func TestOfAndParseRoundTrip(t *testing.T) {
	t.Parallel()
	require.Empty(t, Of(context.Background()), "no span, no trace context")
	_, ok := Parse("")
	require.False(t, ok)
	_, ok = Parse("not-a-traceparent")
	require.False(t, ok)

	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	sc, ok := Parse(tp)
	require.True(t, ok)
	require.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", sc.TraceID().String())
	require.Equal(t, "00f067aa0ba902b7", sc.SpanID().String())
	require.Equal(t, tp, Of(trace.ContextWithSpanContext(context.Background(), sc)))
}
