package mcp

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// origins decides which browser origins may use /mcp. The MCP spec asks a
// streamable HTTP server to validate Origin, so that a web page the user
// visits cannot drive an agent's session with the user's credentials (or
// reach a server on localhost through DNS rebinding).
//
// A request passes when it has no Origin (agents, the CLI and other
// non-browser clients send none), when its Origin is the server's own
// (same scheme, and the same host and port as the Host header, exactly),
// or when its Origin is one of the configured ones
// (TETHER_MCP_ALLOWED_ORIGINS). Anything else is refused, "null" included.
type origins struct {
	allowed map[string]bool // canonical origins
}

// newOrigins checks and keeps the configured origins, each
// scheme://host[:port] with scheme http or https.
func newOrigins(allowed []string) (origins, error) {
	o := origins{allowed: map[string]bool{}}
	for _, a := range allowed {
		c, ok := canonicalOrigin(a)
		if !ok {
			return o, fmt.Errorf("%q is not an origin (scheme://host[:port], with scheme http or https)", a)
		}
		o.allowed[c] = true
	}
	return o, nil
}

// ParseAllowedOrigins checks a list of origins for
// HTTPOptions.AllowedOrigins (TETHER_MCP_ALLOWED_ORIGINS).
func ParseAllowedOrigins(allowed []string) error {
	_, err := newOrigins(allowed)
	return err
}

// refusal is why r may not use /mcp, or "" when it may.
func (o origins) refusal(r *http.Request) string {
	values := r.Header.Values("Origin")
	if len(values) == 0 {
		return ""
	}
	origin := values[0]
	if len(values) == 1 {
		if c, ok := canonicalOrigin(origin); ok && (o.allowed[c] || c == ownOrigin(r)) {
			return ""
		}
	}
	return fmt.Sprintf("origin %q may not use /mcp: only requests without an Origin, from the server's own origin, "+
		"or from an origin in TETHER_MCP_ALLOWED_ORIGINS may", origin)
}

// ownOrigin is the origin r was addressed to: its scheme and its Host.
func ownOrigin(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	c, _ := canonicalOrigin(scheme + "://" + r.Host)
	return c
}

// canonicalOrigin is origin in one spelling (lower case, no default port),
// ok false when it is not scheme://host[:port] with scheme http or https.
func canonicalOrigin(origin string) (string, bool) {
	u, err := url.Parse(origin)
	if err != nil || u.Opaque != "" || u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" ||
		u.ForceQuery || u.Host == "" {
		return "", false
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return "", false
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if host == "" {
		return "", false
	}
	if port != "" {
		host = net.JoinHostPort(host, port)
	} else if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return scheme + "://" + host, true
}
