package graph_test

import (
	"os"
	"testing"

	"github.com/tether-run/tether/internal/snippettest"
)

// TestREADMESnippetIsTheExample: every line of the README's in-process
// snippet (the ```go block after "## In a Go program") is a line of this
// package's Example, which the compiler checks and whose output is checked.
func TestREADMESnippetIsTheExample(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	snippet := snippettest.Block(t, string(readme), "## In a Go program", "go")
	if n := snippettest.LinesIn(t, snippet, "example_test.go", true); n < 10 {
		t.Errorf("the README's in-process snippet has %d lines of code; the extraction is broken", n)
	}
}
