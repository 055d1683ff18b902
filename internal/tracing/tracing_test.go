package tracing_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tether-run/tether/internal/tracing"
)

// TestTracingEnabledByTheStandardVariables: OTEL_* decide, TETHER_OTEL=1
// too, and the SDK's off switches win.
func TestTracingEnabledByTheStandardVariables(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4317"}, true},
		{map[string]string{"TETHER_OTEL": "1"}, true},
		{map[string]string{"TETHER_OTEL": "1", "OTEL_SDK_DISABLED": "true"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317", "OTEL_TRACES_EXPORTER": "none"}, false},
	} {
		if got := tracing.Enabled(func(k string) string { return c.env[k] }); got != c.want {
			t.Errorf("%v: enabled %v, want %v", c.env, got, c.want)
		}
	}
	_, _, err := tracing.Setup(context.Background(), "tether", func(k string) string {
		return map[string]string{"TETHER_OTEL": "1", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}[k]
	})
	if err == nil || !strings.Contains(err.Error(), "grpc") {
		t.Errorf("http/protobuf: %v, want a clear refusal", err)
	}
}
