package pyclientgen

import (
	"bytes"
	"fmt"
	"strings"
)

// writer builds Python source: lines at an indentation of four spaces per
// level, comments and docstrings from the spec's Markdown text.
type writer struct {
	buf    bytes.Buffer
	indent int
}

func (w *writer) line(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	if s == "" {
		w.buf.WriteByte('\n')
		return
	}
	w.buf.WriteString(strings.Repeat("    ", w.indent))
	w.buf.WriteString(s)
	w.buf.WriteByte('\n')
}

// comment writes text as # lines; nothing for empty text.
func (w *writer) comment(text string) {
	text = strings.TrimSpace(text)
	if text == "" {
		return
	}
	for _, l := range strings.Split(text, "\n") {
		w.line("%s", strings.TrimRight("# "+l, " "))
	}
}

// docstring writes text as a triple-quoted docstring.
func (w *writer) docstring(text string) {
	text = strings.TrimSpace(text)
	text = strings.ReplaceAll(text, `\`, `\\`)
	text = strings.ReplaceAll(text, `"""`, `\"\"\"`)
	lines := strings.Split(text, "\n")
	if len(lines) == 1 && !strings.HasSuffix(text, `"`) {
		w.line(`"""%s"""`, text)
		return
	}
	w.line(`"""%s`, lines[0])
	for _, l := range lines[1:] {
		w.line("%s", strings.TrimRight(l, " "))
	}
	w.line(`"""`)
}
