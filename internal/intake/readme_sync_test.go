package intake

import (
	"os"
	"testing"

	"github.com/tether-run/tether/internal/snippettest"
)

// TestREADMESnippetIsTheExample: every line of the README's intake snippet
// (the ```go block after "## Enqueue in your own transaction") is a line of
// signUp in example_test.go, which the compiler checks and a test runs.
func TestREADMESnippetIsTheExample(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	snippet := snippettest.Block(t, string(readme), "## Enqueue in your own transaction", "go")
	if n := snippettest.LinesIn(t, snippet, "example_test.go", true); n < 10 {
		t.Errorf("the README's intake snippet has %d lines of code; the extraction is broken", n)
	}
}
