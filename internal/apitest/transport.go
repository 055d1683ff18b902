package apitest

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// ValidateRequestHeader, set to "1" on a request, has ValidatingTransport
// validate the request as well as the response.
const ValidateRequestHeader = "X-Apitest-Validate-Request"

// maxReportedBody bounds how much of a body a failure report quotes.
const maxReportedBody = 4 << 10

// ValidatingTransport returns a RoundTripper that sends requests through base
// (http.DefaultTransport when nil) and validates every response against the
// spec, reporting each mismatch with t.Errorf. The response reaches the caller
// unchanged, its body readable. Streaming responses (text/event-stream) are
// passed through unvalidated: reading them to the end would block.
func ValidatingTransport(t testing.TB, base http.RoundTripper) http.RoundTripper {
	t.Helper()
	if base == nil {
		base = http.DefaultTransport
	}
	router, err := sharedRouter(t)
	if err != nil {
		t.Fatalf("apitest: building a router from the spec: %v", err)
	}
	return &validatingTransport{t: t, base: base, router: router}
}

// The parsed spec and its router are shared by every transport of a test
// binary: parsing the spec takes far longer than a request, and neither is
// changed after it is built.
var (
	routerOnce sync.Once
	router     routers.Router
	routerErr  error
)

func sharedRouter(t testing.TB) (routers.Router, error) {
	routerOnce.Do(func() {
		spec := LoadSpec(t)
		// Match any host: test servers listen on ports the spec cannot name.
		spec.Servers = nil
		router, routerErr = legacy.NewRouter(spec)
	})
	return router, routerErr
}

type validatingTransport struct {
	t      testing.TB
	base   http.RoundTripper
	router routers.Router
}

func (v *validatingTransport) options() *openapi3filter.Options {
	return &openapi3filter.Options{
		IncludeResponseStatus: true,
		MultiError:            true,
		AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
		// The report quotes the body once; a schema dump per error would bury it.
		SchemaValidationOptions: []openapi3.SchemaValidationOption{openapi3.DisableSchemaErrorDetails()},
	}
}

func (v *validatingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	route, pathParams, routeErr := v.router.FindRoute(routable(req))

	if routeErr == nil && req.Header.Get(ValidateRequestHeader) == "1" {
		var err error
		if req, err = v.validateRequest(req, route, pathParams); err != nil {
			return nil, err
		}
	}

	resp, err := v.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	if isStream(resp) {
		return resp, nil
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("apitest: reading the response body: %w", err)
	}

	if routeErr != nil {
		// The server may reject a route the spec does not describe; it may not
		// serve one.
		if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed {
			v.t.Errorf("apitest: %s %s → %d: no such operation in the spec (%v)\nbody: %s",
				req.Method, req.URL.RequestURI(), resp.StatusCode, routeErr, quote(body))
		}
		return resp, nil
	}

	input := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request:    req,
			PathParams: pathParams,
			Route:      route,
			Options:    v.options(),
		},
		Status:  resp.StatusCode,
		Header:  resp.Header,
		Body:    io.NopCloser(bytes.NewReader(body)),
		Options: v.options(),
	}
	if err := openapi3filter.ValidateResponse(req.Context(), input); err != nil {
		v.t.Errorf("apitest: response does not match the spec: %s %s → %d (%s)\n%v\nbody: %s",
			req.Method, req.URL.RequestURI(), resp.StatusCode, resp.Header.Get("Content-Type"), err, quote(body))
	}
	return resp, nil
}

// validateRequest validates req and returns the request to send: a clone with
// the body restored, as a RoundTripper may not change the caller's request.
func (v *validatingTransport) validateRequest(req *http.Request, route *routers.Route, pathParams map[string]string) (*http.Request, error) {
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		var err error
		body, err = io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("apitest: reading the request body: %w", err)
		}
	}
	clone := func() *http.Request {
		c := req.Clone(req.Context())
		if req.Body != nil && req.Body != http.NoBody {
			c.Body = io.NopCloser(bytes.NewReader(body))
			c.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		}
		return c
	}

	input := &openapi3filter.RequestValidationInput{
		Request:    clone(),
		PathParams: pathParams,
		Route:      route,
		Options:    v.options(),
	}
	input.Options.SkipSettingDefaults = true
	if err := openapi3filter.ValidateRequest(req.Context(), input); err != nil {
		v.t.Errorf("apitest: request does not match the spec: %s %s\n%v\nbody: %s",
			req.Method, req.URL.RequestURI(), err, quote(body))
	}
	return clone(), nil
}

func isStream(resp *http.Response) bool {
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return mediaType == "text/event-stream"
}

func quote(body []byte) string {
	if len(body) > maxReportedBody {
		return fmt.Sprintf("%s… (%d bytes)", body[:maxReportedBody], len(body))
	}
	return string(body)
}

// routable is req as the router should match it: a path parameter sent as
// one escaped segment (a concurrency key holding "/", as "%2F") stays one
// segment, which the router's split of the decoded path would break.
func routable(req *http.Request) *http.Request {
	if req.URL.RawPath == "" {
		return req
	}
	r := req.Clone(req.Context())
	r.URL.Path = req.URL.RawPath
	return r
}
