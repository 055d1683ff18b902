package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// printError writes the error that ends a command to w (stderr): as text, or
// with -o json as a problem document (RFC 9457) on one line: the server's own
// for a refused call, else one with code "usage" (a mistake in the command
// line, exit 2) or "error" (anything else: no answer, a bad local file).
func printError(w io.Writer, err error, asJSON bool) {
	if !asJSON {
		fmt.Fprintln(w, "tether:", err)
		return
	}
	var pe *problemError
	if errors.As(err, &pe) && json.Valid(pe.body) {
		var buf bytes.Buffer
		if json.Compact(&buf, pe.body) == nil {
			buf.WriteByte('\n')
			_, _ = w.Write(buf.Bytes())
			return
		}
	}
	code, title := "error", "Error"
	if exitCode(err) == 2 {
		code, title = "usage", "Usage error"
	}
	b, _ := json.Marshal(struct {
		Type   string `json:"type"`
		Title  string `json:"title"`
		Code   string `json:"code"`
		Detail string `json:"detail"`
	}{"about:blank", title, code, err.Error()})
	fmt.Fprintf(w, "%s\n", b)
}
