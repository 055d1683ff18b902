package tether_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/tether-run/tether"

// goPackage is what this test reads of `go list -json`.
type goPackage struct {
	ImportPath string
	Imports    []string
	Name       string
}

// listPackages is every package of the module with its direct imports.
func listPackages(t *testing.T) map[string]goPackage {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]goPackage{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p goPackage
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs[strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")] = p
	}
	return pkgs
}

// layoutSection is the README's Layout section.
func layoutSection(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Layout\n")
	if !ok {
		t.Fatal("README.md has no Layout section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	return section
}

var tableRow = regexp.MustCompile("(?m)^\\| `([a-z0-9/._-]+)`")

// TestLayoutNamesEveryPackage holds the README's Layout section to the
// tree: every package of the module is named there, in a table row or in
// the prose of shared and test helpers, and every package a table row names
// exists.
func TestLayoutNamesEveryPackage(t *testing.T) {
	section := layoutSection(t)
	pkgs := listPackages(t)
	for path := range pkgs {
		name := path
		if name == "" {
			continue // the root package: openapi.yaml's embedding, named as such
		}
		if !strings.Contains(section, "`"+name+"`") {
			t.Errorf("README's Layout does not name the package `%s`", name)
		}
	}
	for _, m := range tableRow.FindAllStringSubmatch(section, -1) {
		path := m[1]
		if strings.Contains(path, ".") {
			continue // a file (openapi.yaml)
		}
		if _, ok := pkgs[path]; ok {
			continue
		}
		if _, err := os.Stat(path); err != nil {
			t.Errorf("README's Layout names `%s`, which is neither a package nor a directory", path)
		}
	}
}

// TestServerPackagesImportOnlyThoseAbove is the import-order check: the
// Layout's table of the server's packages lists them from the storage engine
// up, and each imports (directly) only packages above it in that table,
// never one at or below its own row.
func TestServerPackagesImportOnlyThoseAbove(t *testing.T) {
	section := layoutSection(t)
	_, table, ok := strings.Cut(section, "The server, from the storage engine up")
	if !ok {
		t.Fatal("README's Layout has no table of the server's packages in import order")
	}
	if i := strings.Index(table, "\n| package"); i >= 0 {
		table = table[i+1:]
	}
	table, _, _ = strings.Cut(table, "\n\n")
	var order []string
	for _, m := range tableRow.FindAllStringSubmatch(table, -1) {
		order = append(order, m[1])
	}
	if len(order) < 10 {
		t.Fatalf("the import-order table lists %d packages", len(order))
	}
	pkgs := listPackages(t)
	for i, path := range order {
		p, ok := pkgs[path]
		if !ok {
			t.Errorf("the import-order table names `%s`, which is not a package", path)
			continue
		}
		for _, imp := range p.Imports {
			rel, ok := strings.CutPrefix(imp, module+"/")
			if !ok {
				continue
			}
			if j := slices.Index(order, rel); j >= i {
				t.Errorf("`%s` (row %d) imports `%s` (row %d): a package imports only those above it", path, i+1, rel, j+1)
			}
		}
	}
}
