package apitest

import (
	"context"
	"net/http"
	"strconv"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"
)

func TestSpecValid(t *testing.T) {
	t.Parallel()
	spec := LoadSpec(t)
	require.NoError(t, spec.Validate(context.Background()))
}

// TestSpecConventions pins the rules every operation of the spec follows, so
// that operations added later keep to them.
func TestSpecConventions(t *testing.T) {
	t.Parallel()
	spec := LoadSpec(t)
	public := map[string]bool{"/health": true, "/ready": true, "/openapi.yaml": true, "/skill.md": true, "/ui": true, "/ui/{file}": true}
	// Operator endpoints take an operator token, not a tenant credential.
	operator := map[string]bool{"/admin/backup": true}
	ids := map[string]string{}

	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			name := method + " " + path
			require.NotEmpty(t, op.OperationID, "%s: operationId", name)
			require.NotContains(t, ids, op.OperationID, "%s: operationId %q also on %s", name, op.OperationID, ids[op.OperationID])
			ids[op.OperationID] = name
			require.NotEmpty(t, op.Tags, "%s: tags", name)

			switch {
			case public[path]:
				require.NotNil(t, op.Security, "%s: a public operation says security: []", name)
				require.Empty(t, *op.Security, "%s: a public operation says security: []", name)
			case path == "/metrics":
				// Anonymous (process-wide series only) or a metrics token
				// (every series).
				require.NotNil(t, op.Security, "%s: says security: [{}, metricsToken]", name)
				require.Len(t, *op.Security, 2, name)
				require.Empty(t, (*op.Security)[0], "%s: anonymous first", name)
				require.Contains(t, (*op.Security)[1], "metricsToken", name)
				require.NotNil(t, op.Responses.Status(http.StatusUnauthorized), "%s: documents 401", name)
			case operator[path]:
				require.NotNil(t, op.Security, "%s: an operator operation says security: operatorToken", name)
				require.Len(t, *op.Security, 1, name)
				require.Contains(t, (*op.Security)[0], "operatorToken", name)
				require.NotNil(t, op.Responses.Status(http.StatusUnauthorized), "%s: documents 401", name)
			default:
				require.Nil(t, op.Security, "%s: uses the global bearer security", name)
				for _, status := range []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusInternalServerError} {
					require.NotNil(t, op.Responses.Status(status), "%s: documents %d", name, status)
				}
			}
			require.Nil(t, op.Responses.Default(), "%s: no default response (undocumented statuses must fail)", name)

			for code, ref := range op.Responses.Map() {
				status, err := strconv.Atoi(code)
				require.NoError(t, err, "%s: response %q", name, code)
				if status < 400 {
					continue
				}
				require.NotEmpty(t, ref.Ref, "%s %d: a shared components/responses entry", name, status)
				require.Len(t, ref.Value.Content, 1, "%s %d: one content type", name, status)
				problem := ref.Value.Content.Get("application/problem+json")
				require.NotNil(t, problem, "%s %d: application/problem+json", name, status)
				require.Equal(t, "#/components/schemas/Problem", problem.Schema.Ref, "%s %d", name, status)
				if status == http.StatusTooManyRequests {
					require.Contains(t, ref.Value.Headers, "Retry-After", "%s %d", name, status)
				}
			}

			if op.RequestBody != nil {
				for mediaType, content := range op.RequestBody.Value.Content {
					requireClosed(t, name+" "+mediaType, content.Schema)
				}
			}
		}
	}
}

// requireClosed checks that a request body object rejects unknown members.
func requireClosed(t *testing.T, name string, schema *openapi3.SchemaRef) {
	t.Helper()
	require.NotNil(t, schema, "%s: a schema", name)
	s := schema.Value
	if !s.Type.Is(openapi3.TypeObject) {
		return
	}
	require.NotNil(t, s.AdditionalProperties.Has, "%s: additionalProperties: false", name)
	require.False(t, *s.AdditionalProperties.Has, "%s: additionalProperties: false", name)
}
