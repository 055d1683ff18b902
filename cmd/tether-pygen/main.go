// Command tether-pygen writes the generated modules of the Python client
// (models.py and _operations.py in clients/python/tether_client) from the
// OpenAPI spec. `make generate` runs it; `make verify` fails when its output
// differs from what is committed.
//
//	go run ./cmd/tether-pygen -spec openapi.yaml -out clients/python/tether_client
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/tether-run/tether/internal/pyclientgen"
)

func main() {
	specPath := flag.String("spec", "openapi.yaml", "the OpenAPI spec to read")
	out := flag.String("out", "clients/python/tether_client", "the package directory to write into")
	flag.Parse()
	if err := run(*specPath, *out); err != nil {
		fmt.Fprintln(os.Stderr, "tether-pygen:", err)
		os.Exit(1)
	}
}

func run(specPath, out string) error {
	src, err := os.ReadFile(specPath)
	if err != nil {
		return err
	}
	files, err := pyclientgen.Generate(src)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := os.WriteFile(filepath.Join(out, name), files[name], 0o644); err != nil {
			return err
		}
	}
	return nil
}
