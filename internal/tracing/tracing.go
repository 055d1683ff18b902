package tracing

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Enabled reports whether the environment (getenv) asks for traces.
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") || strings.EqualFold(getenv("OTEL_TRACES_EXPORTER"), "none") {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || getenv("TETHER_OTEL") == "1"
}

// Setup builds the tracer provider the environment asks for, named service
// unless OTEL_SERVICE_NAME says otherwise; nil (and a shutdown that does
// nothing) when traces are off. Call shutdown before exiting: it sends the
// spans still buffered.
func Setup(ctx context.Context, service string, getenv func(string) string) (trace.TracerProvider, func(context.Context) error, error) {
	none := func(context.Context) error { return nil }
	if !Enabled(getenv) {
		return nil, none, nil
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
		if p := getenv(name); p != "" && p != "grpc" {
			return nil, none, fmt.Errorf("%s=%s: Tether exports traces over OTLP gRPC only (grpc)", name, p)
		}
	}
	exp, err := otlptracegrpc.New(ctx)
	if err != nil {
		return nil, none, fmt.Errorf("error making the OTLP trace exporter: %w", err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(serviceName(service, getenv)))
	if err != nil {
		return nil, none, err
	}
	// The environment's own resource (OTEL_RESOURCE_ATTRIBUTES) wins.
	if env, err := resource.New(ctx, resource.WithFromEnv()); err == nil {
		if merged, err := resource.Merge(res, env); err == nil {
			res = merged
		}
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return tp, tp.Shutdown, nil
}

// Flush sends the spans still buffered through stop (Setup's), for at most
// 5 s, and logs a failure.
func Flush(log *slog.Logger, stop func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := stop(ctx); err != nil {
		log.Warn("error sending the last spans", "err", err)
	}
}
