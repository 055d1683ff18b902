package nodes

import (
	"context"

	"github.com/tether-run/tether/internal/records"
	"github.com/tether-run/tether/internal/traceparent"
)

// keepTraceparent keeps the creating request's trace context on each new
// node (Node.Traceparent, a field of its own: the caller's props are left
// as given), so the run that claims the node can link to the request that
// made it. With tracing off there is no span context and nothing is kept.
func keepTraceparent(ctx context.Context, nodes []*records.Node) {
	tp := traceparent.Of(ctx)
	if tp == "" {
		return
	}
	for _, n := range nodes {
		n.Traceparent = tp
	}
}
