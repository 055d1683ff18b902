package nodes

import (
	"context"

	"github.com/tether-run/tether/internal/records"
	"github.com/tether-run/tether/internal/tracing"
)

// keepTraceparent puts the creating request's trace context into each new
// node's props (tracing.Prop), unless the caller set that prop itself, so
// the run that claims the node can link to the request that made it. With
// tracing off there is no span context and nothing is added.
func keepTraceparent(ctx context.Context, nodes []*records.Node) {
	tp := tracing.Traceparent(ctx)
	if tp == "" {
		return
	}
	for _, n := range nodes {
		if _, set := n.Props[tracing.Prop]; set {
			continue
		}
		if n.Props == nil {
			n.Props = map[string]any{}
		}
		n.Props[tracing.Prop] = tp
	}
}
