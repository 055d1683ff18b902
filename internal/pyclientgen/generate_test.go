package pyclientgen

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"
)

const (
	specPath = "../../openapi.yaml"
	pkgDir   = "../../clients/python/tether_client"
)

func generated(t *testing.T) Files {
	t.Helper()
	src, err := os.ReadFile(specPath)
	require.NoError(t, err)
	files, err := Generate(src)
	require.NoError(t, err)
	return files
}

// TestGeneratedPythonIsFresh is `make verify`'s check for the Python client,
// run by `go test` too: the committed modules are what the spec gives.
func TestGeneratedPythonIsFresh(t *testing.T) {
	t.Parallel()
	files := generated(t)
	require.Len(t, files, 2)
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(pkgDir, name))
		require.NoError(t, err)
		require.True(t, bytes.Equal(want, got),
			"clients/python/tether_client/%s is stale: run make generate and commit it", name)
		require.True(t, bytes.HasPrefix(got, []byte(Header+"\n")), name)
	}
}

// TestEveryOperationIsAMethod counts the spec's operations with another
// parser (kin-openapi) and finds each one's sync and async method.
func TestEveryOperationIsAMethod(t *testing.T) {
	t.Parallel()
	doc, err := openapi3.NewLoader().LoadFromFile(specPath)
	require.NoError(t, err)
	ops := string(generated(t)["_operations.py"])
	n := 0
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			n++
			name := snake(op.OperationID)
			require.Equal(t, 1, strings.Count(ops, "\n    def "+name+"(\n"), "%s %s: sync method %s", method, path, name)
			require.Equal(t, 1, strings.Count(ops, "\n    async def "+name+"(\n"), "%s %s: async method %s", method, path, name)
			require.Contains(t, ops, "``"+method+" "+path+"`` ("+op.OperationID+")")
		}
	}
	require.Greater(t, n, 60)
	require.Equal(t, n, strings.Count(ops, "\n    def ")-1, "one sync method per operation, besides _call")
}

func TestEverySchemaIsAModel(t *testing.T) {
	t.Parallel()
	doc, err := openapi3.NewLoader().LoadFromFile(specPath)
	require.NoError(t, err)
	models := string(generated(t)["models.py"])
	for name := range doc.Components.Schemas {
		require.Truef(t,
			strings.Contains(models, "\nclass "+name+"(TypedDict):") || strings.Contains(models, "\n"+name+" = "),
			"no model %s", name)
	}
}

func TestSnake(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"createNode":       "create_node",
		"claimNextMany":    "claim_next_many",
		"getOpenAPI":       "get_open_api",
		"headHealth":       "head_health",
		"Idempotency_Key":  "idempotency_key",
		"Last_Event_ID":    "last_event_id",
		"include_retired":  "include_retired",
		"getDashboardFile": "get_dashboard_file",
	} {
		require.Equal(t, want, snake(in), in)
	}
	require.Equal(t, "from_", pyIdent("from"))
}

// TestShapesItCannotWriteAreErrors: the generator refuses what it does not
// know rather than leave an operation or a member out.
func TestShapesItCannotWriteAreErrors(t *testing.T) {
	t.Parallel()
	base := `openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /x:
    get:
      operationId: getX
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {$ref: "#/components/schemas/X"}
components:
  schemas:
    X:
`
	for name, schema := range map[string]string{
		"not":           "      not: {type: string}\n",
		"remote ref":    "      $ref: \"other.yaml#/X\"\n",
		"unknown type":  "      type: file\n",
		"allOf of many": "      allOf: [{type: object}, {type: object}]\n",
	} {
		_, err := Generate([]byte(base + schema))
		require.Error(t, err, name)
	}
	_, err := Generate([]byte(strings.Replace(base, "      operationId: getX\n", "", 1) + "      type: string\n"))
	require.ErrorContains(t, err, "no operationId")

	files, err := Generate([]byte(base + "      oneOf: [{type: string}, {$ref: \"#/components/schemas/Y\"}]\n    Y: {type: integer}\n"))
	require.NoError(t, err)
	require.Contains(t, string(files["models.py"]), "X = Union[str, \"Y\"]\n")

	files, err = Generate([]byte(base + "      type: object\n      properties:\n        from: {type: string}\n      required: [from]\n"))
	require.NoError(t, err)
	require.Contains(t, string(files["models.py"]), "X = TypedDict(\n    \"X\",\n    {\n        \"from\": str,\n")
}
