package tracing

import (
	"go.opentelemetry.io/otel/attribute"
)

// serviceName is the service.name attribute: OTEL_SERVICE_NAME, else def.
func serviceName(def string, getenv func(string) string) attribute.KeyValue {
	if v := getenv("OTEL_SERVICE_NAME"); v != "" {
		def = v
	}
	return attribute.String("service.name", def)
}
