package client_test

import (
	"os"
	"testing"

	"github.com/tether-run/tether/internal/snippettest"
)

// TestREADMEGoSnippetIsTheExample: every line of the README's Go snippet is a
// line of ExampleClientWithResponses_ClaimNextWithResponse, which the
// compiler checks, so the snippet cannot use what it does not define.
func TestREADMEGoSnippetIsTheExample(t *testing.T) {
	snippet := snippettest.Block(t, readme(t), "", "go")
	if n := snippettest.LinesIn(t, snippet, "example_readme_test.go", true); n < 10 {
		t.Errorf("the README's Go snippet has %d lines of code; the extraction is broken", n)
	}
}

// TestREADMETypeScriptSnippetIsTypeChecked: every line of the README's
// TypeScript snippet is a line of clients/typescript/test/readme-example.ts,
// which `npm run check` (.ci/typescript-e2e.sh) type-checks.
func TestREADMETypeScriptSnippetIsTypeChecked(t *testing.T) {
	snippet := snippettest.Block(t, readme(t), "", "ts")
	snippettest.LinesIn(t, snippet, "../clients/typescript/test/readme-example.ts", false)
}

// readme is the repository's README.md.
func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
