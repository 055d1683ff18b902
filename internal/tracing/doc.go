// Package tracing is Tether's OpenTelemetry traces: optional, off by
// default, and configured only through OpenTelemetry's standard environment
// variables.
//
// Enabled when OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set, or TETHER_OTEL=1 (the
// exporter's default endpoint, localhost:4317); never when
// OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none. Spans go over OTLP
// gRPC (the official SDK's otlptracegrpc exporter, which reads the other
// OTEL_EXPORTER_OTLP_* variables itself); OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES and OTEL_TRACES_SAMPLER work as the SDK defines
// them.
//
// What is traced, when on:
//   - every HTTP request: a server span, child of the caller's W3C
//     traceparent header when there is one (api/tracing.go);
//   - each store write a request makes: a child span covering its wait for
//     the writer's commit, which many requests share (group commit), from
//     the moment it is queued until it is durable (internal/graphstore/trace.go);
//   - the creating request's trace context, kept on each node it creates in
//     the node's own traceparent field (never in the caller's props): a
//     claim returns the node with it, and `tether work` starts each run's
//     span with a link to it (and hands the run's own context to the command
//     as TRACEPARENT). Converting between a span and a traceparent is
//     package internal/traceparent's, which links no exporter, so the
//     runner can use it without gRPC.
//
// Invariants:
//   - Off, nothing is set up: no middleware, no provider; the store's check
//     is one context lookup per write, and no allocation.
//   - No package-level state: the provider is passed down explicitly.
package tracing
