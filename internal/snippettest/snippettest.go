package snippettest

import (
	"os"
	"strings"
	"testing"
)

// Block is the first fenced block of lang (```lang) in text after the
// heading after, if after is not empty (up to the next "## " heading); it
// fails the test when there is none.
func Block(t *testing.T, text, after, lang string) string {
	t.Helper()
	if after != "" {
		_, section, ok := strings.Cut(text, "\n"+after+"\n")
		if !ok {
			t.Fatalf("no %q section", after)
		}
		text, _, _ = strings.Cut(section, "\n## ")
	}
	_, rest, ok := strings.Cut(text, "```"+lang+"\n")
	if !ok {
		t.Fatalf("no ```%s block", lang)
	}
	block, _, _ := strings.Cut(rest, "```")
	return block
}

// LinesIn fails the test for every line of code in snippet that is not a
// line of the file at source, comparing them trimmed (and without a //
// comment when stripComments), and returns how many lines of code the
// snippet has, so the caller can check the extraction found the snippet.
func LinesIn(t *testing.T, snippet, source string, stripComments bool) int {
	t.Helper()
	b, err := os.ReadFile(source)
	if err != nil {
		t.Fatal(err)
	}
	code := func(l string) string {
		if stripComments {
			l, _, _ = strings.Cut(l, "//")
		}
		return strings.TrimSpace(l)
	}
	lines := map[string]bool{}
	for l := range strings.Lines(string(b)) {
		lines[code(l)] = true
	}
	n := 0
	for l := range strings.Lines(snippet) {
		c := code(l)
		if c == "" {
			continue
		}
		n++
		if !lines[c] {
			t.Errorf("README line not in %s: %s", source, c)
		}
	}
	return n
}
