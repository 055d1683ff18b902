package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAPIAppendersAreCurrent fails when api/encode_gen.go is not what the
// DTOs of api/dto.go make: a field added to one of them without
// `go generate ./api/`.
func TestAPIAppendersAreCurrent(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "encode_gen.go")
	require.NoError(t, run("../../api/dto.go", out, []string{"nodeJSON", "leaseJSON", "edgeJSON"}))
	want, err := os.ReadFile(out)
	require.NoError(t, err)
	have, err := os.ReadFile("../../api/encode_gen.go")
	require.NoError(t, err)
	require.Equal(t, string(want), string(have), "api/encode_gen.go is stale: run go generate ./api/")
}

// TestUnknownFieldTypeIsAnError: a field of a type the generator has no
// appender for stops it, naming the field, rather than writing something.
func TestUnknownFieldTypeIsAnError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := filepath.Join(dir, "dto.go")
	require.NoError(t, os.WriteFile(in, []byte("package api\n\ntype xJSON struct {\n\tN float32 `json:\"n\"`\n}\n"), 0o644))
	err := run(in, filepath.Join(dir, "out.go"), []string{"xJSON"})
	require.ErrorContains(t, err, "xJSON.N: no appender for float32")
}
