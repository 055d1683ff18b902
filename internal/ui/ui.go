package ui

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
)

//go:embed static
var static embed.FS

// Page is the dashboard's page; its files are served under Prefix, and
// Prefix alone redirects to Page.
const (
	Page   = "/ui"
	Prefix = Page + "/"
)

// securityHeaders are set on every file the dashboard serves.
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; " +
		"connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
	"X-Content-Type-Options":       "nosniff",
	"X-Frame-Options":              "DENY",
	"Referrer-Policy":              "no-referrer",
	"Cross-Origin-Opener-Policy":   "same-origin",
	"Cross-Origin-Resource-Policy": "same-origin",
	// The files change with the binary: revalidate rather than run stale code.
	"Cache-Control": "no-cache",
}

// Handler serves the dashboard's page at Page and its files for paths under
// Prefix.
func Handler() http.Handler {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree always has the directory
	}
	files := http.StripPrefix(Prefix, http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		for k, v := range securityHeaders {
			h.Set(k, v)
		}
		if r.URL.Path == Page {
			r = r.Clone(r.Context())
			r.URL.Path = Prefix // the directory: its index.html
		}
		files.ServeHTTP(w, r)
	})
}

// Has reports whether name, a path below Prefix, is a file of the dashboard.
func Has(name string) bool {
	fi, err := fs.Stat(static, path.Join("static", name))
	return err == nil && !fi.IsDir()
}
