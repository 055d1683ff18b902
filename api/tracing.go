package api

import (
	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// traced is the middleware that gives every request a server span (only
// installed when Config.Tracer is set; see package internal/tracing): the
// child of the caller's W3C traceparent when it sends one, named by method
// and route template. It runs inside edge, after routing, so the route is
// known; errors are written here so the span sees the final status.
func traced(tp trace.TracerProvider) echo.MiddlewareFunc {
	tracer := tp.Tracer("github.com/tether-run/tether/api")
	prop := propagation.TraceContext{}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			route := c.Path()
			if route == "" {
				route = "unmatched"
			}
			ctx := prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
			ctx, span := tracer.Start(ctx, r.Method+" "+route, trace.WithSpanKind(trace.SpanKindServer),
				trace.WithAttributes(
					attribute.String("http.request.method", r.Method),
					attribute.String("http.route", route),
					attribute.String("url.path", r.URL.Path),
				))
			defer span.End()
			c.SetRequest(r.WithContext(ctx))
			if err := next(c); err != nil {
				c.Error(err)
			}
			status := c.Response().Status
			span.SetAttributes(attribute.Int("http.response.status_code", status))
			if p := principal(c); p != nil {
				span.SetAttributes(attribute.String("tether.tenant", p.Tenant))
			}
			if status >= 500 {
				span.SetStatus(codes.Error, "")
			}
			return nil
		}
	}
}
