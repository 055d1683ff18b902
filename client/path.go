package client

import (
	"fmt"
	"strings"
)

// pathSegment makes a styled path parameter (already percent-encoded, so
// that "/" is "%2F") safe as one segment of the request's path: "." and
// "..", which url.URL.Parse and every URL parser resolve as dot segments,
// are sent as "%2E" and "%2E%2E", so that no value moves the request to
// another route (the node ".." once fetched GET /v1/events). An empty value
// would leave an empty segment, which is no parameter at all: it is an
// error naming the parameter. The generated request builders call it for
// every path parameter (templates/client.tmpl).
func pathSegment(name, styled string) (string, error) {
	switch styled {
	case "":
		return "", fmt.Errorf("the path parameter %s is empty", name)
	case ".", "..":
		return strings.ReplaceAll(styled, ".", "%2E"), nil
	}
	return styled, nil
}
