package client_test

import (
	"os"
	"strings"
	"testing"
)

// TestREADMEGoSnippetIsTheExample: every line of the README's Go snippet is a
// line of ExampleClientWithResponses_ClaimNextWithResponse, which the
// compiler checks, so the snippet cannot use what it does not define.
func TestREADMEGoSnippetIsTheExample(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile("example_readme_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "```go\n")
	if !ok {
		t.Fatal("no ```go block in README.md")
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
			t.Errorf("README line not in the Example: %s", code)
		}
	}
	if n < 10 {
		t.Errorf("the README's Go snippet has %d lines of code; the extraction is broken", n)
	}
}

// TestREADMETypeScriptSnippetIsTypeChecked: every line of the README's
// TypeScript snippet is a line of clients/typescript/test/readme-example.ts,
// which `npm run check` (.ci/typescript-e2e.sh) type-checks.
func TestREADMETypeScriptSnippetIsTypeChecked(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile("../clients/typescript/test/readme-example.ts")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "```ts\n")
	if !ok {
		t.Fatal("no ```ts block in README.md")
	}
	snippet, _, _ := strings.Cut(rest, "```")
	lines := map[string]bool{}
	for l := range strings.Lines(string(example)) {
		lines[strings.TrimSpace(l)] = true
	}
	for l := range strings.Lines(snippet) {
		if code := strings.TrimSpace(l); code != "" && !lines[code] {
			t.Errorf("README line not in readme-example.ts: %s", code)
		}
	}
}
