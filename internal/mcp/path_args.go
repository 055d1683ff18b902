package mcp

import (
	"fmt"
	"reflect"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// pathArgs are the tool arguments that become a path segment of the API
// call (GET /v1/nodes/{id}/events, POST /v1/queues/{queue}/claim, ...).
var pathArgs = map[string]bool{"node_id": true, "queue": true}

// badPathArg refuses a tool input whose path argument names nothing: empty,
// "." or "..". No node or queue has such a name (the API refuses them), and
// as a path segment a URL parser would resolve "." and ".." away, calling
// another route ("history" of ".." once listed the tenant's whole event
// feed). The client escapes every path parameter as well; this answers the
// agent plainly, naming the argument. nil when in has none of these.
func badPathArg(in any) *sdk.CallToolResult {
	v := reflect.ValueOf(in)
	if v.Kind() != reflect.Struct {
		return nil
	}
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !pathArgs[name] || f.Type.Kind() != reflect.String {
			continue
		}
		switch s := v.Field(i).String(); s {
		case "":
			return badInput(name, name+" is required")
		case ".", "..":
			return badInput(name, fmt.Sprintf("%s may not be %q: it is one segment of the API's path, and no node or queue has that name", name, s))
		}
	}
	return nil
}
