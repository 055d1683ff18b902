package runner_test

import (
	"os"
	"testing"

	"github.com/tether-run/tether/internal/snippettest"
)

// TestREADMESnippetIsTheExample: every line of the README's Go snippet of
// the runner (the ```go block after "## Worker runner") is a line of
// ExampleRun, which the compiler checks.
func TestREADMESnippetIsTheExample(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	snippet := snippettest.Block(t, string(readme), "## Worker runner", "go")
	if n := snippettest.LinesIn(t, snippet, "example_test.go", true); n < 8 {
		t.Errorf("the README's runner snippet has %d lines of code; the extraction is broken", n)
	}
}
