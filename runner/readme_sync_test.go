package runner_test

import (
	"os"
	"strings"
	"testing"
)

// TestREADMESnippetIsTheExample: every line of the README's Go snippet of
// the runner (the ```go block after "## Worker runner") is a line of
// ExampleRun, which the compiler checks.
func TestREADMESnippetIsTheExample(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Worker runner\n")
	if !ok {
		t.Fatal("no Worker runner section in README.md")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	_, rest, ok := strings.Cut(section, "```go\n")
	if !ok {
		t.Fatal("no ```go block in the README's Worker runner section")
	}
	snippet, _, _ := strings.Cut(rest, "```")
	lines := map[string]bool{}
	for l := range strings.Lines(string(example)) {
		lines[strings.TrimSpace(strings.SplitN(l, "//", 2)[0])] = true
	}
	n := 0
	for l := range strings.Lines(snippet) {
		code := strings.TrimSpace(strings.SplitN(l, "//", 2)[0])
		if code == "" {
			continue
		}
		n++
		if !lines[code] {
			t.Errorf("README line not in ExampleRun: %s", code)
		}
	}
	if n < 8 {
		t.Errorf("the README's runner snippet has %d lines of code; the extraction is broken", n)
	}
}
