package apitest

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// SpecPath is the location of the spec relative to the module root.
const SpecPath = "openapi.yaml"

// LoadSpec loads openapi.yaml of the module that contains the working
// directory. It does not validate the spec (TestSpecValid does); each call
// returns a fresh document the caller may change.
func LoadSpec(t testing.TB) *openapi3.T {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatalf("apitest: %v", err)
	}
	path := filepath.Join(root, filepath.FromSlash(SpecPath))
	spec, err := openapi3.NewLoader().LoadFromFile(path)
	if err != nil {
		t.Fatalf("apitest: loading %s: %v", path, err)
	}
	return spec
}

// moduleRoot walks up from the working directory (a test runs in its
// package's directory) to the directory holding go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
