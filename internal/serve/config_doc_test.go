package serve

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/cli"
)

const configDocPath = "../../docs/configuration.md"

// codeDirs hold the code of the tether binary: every variable it reads is
// named in one of them.
var codeDirs = []string{".", "../cli", "../envflag", "../../cmd/tether", "../../runner"}

// A name the code reads from the environment: our own settings, the static
// tokens of the Spine roles, and GOMAXPROCS (spareProcs reads it).
var envNameRE = regexp.MustCompile(`^(TETHER_[A-Z0-9_]+|[A-Z_]+_TOKENS?|GOMAXPROCS)$`)

// runtimeOnly are variables the doc lists that only the Go runtime reads.
var runtimeOnly = map[string]bool{"GOMEMLIMIT": true}

// docRow is one row of a table in docs/configuration.md.
type docRow struct {
	env, flag, def string
	server         bool // in the table of tether serve (else the client's)
}

// literal is the row's default when it is one value in backticks.
func (r docRow) literal() (string, bool) {
	if len(r.def) >= 2 && strings.Count(r.def, "`") == 2 && r.def[0] == '`' && r.def[len(r.def)-1] == '`' {
		return r.def[1 : len(r.def)-1], true
	}
	return "", false
}

func readConfigDoc(t *testing.T) (rows []docRow, text string) {
	t.Helper()
	b, err := os.ReadFile(configDocPath)
	require.NoError(t, err)
	server := false
	cell := regexp.MustCompile("^`([^`]+)`$")
	for line := range strings.SplitSeq(string(b), "\n") {
		if strings.HasPrefix(line, "## ") {
			server = strings.Contains(line, "tether serve")
			continue
		}
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		require.Len(t, cells, 4, "a row of variable | flag | default | meaning: %s", line)
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		m := cell.FindStringSubmatch(cells[0])
		require.NotNil(t, m, "the first cell names one variable in backticks: %s", line)
		r := docRow{env: m[1], def: cells[2], server: server}
		if cells[1] != "—" {
			f := cell.FindStringSubmatch(cells[1])
			require.True(t, f != nil && strings.HasPrefix(f[1], "--"), "the flag cell is `--name` or —: %s", line)
			r.flag = strings.TrimPrefix(f[1], "--")
		}
		rows = append(rows, r)
	}
	require.NotEmpty(t, rows)
	return rows, string(b)
}

// envNamesInCode are the variable names written as string literals in the
// binary's own (non-test) files: every os.Getenv, envflag.String, envflag.Int
// and envflag.List call and the table in loadEnv name theirs so.
func envNamesInCode(t *testing.T) map[string]bool {
	t.Helper()
	var files []string
	for _, dir := range codeDirs {
		in, err := filepath.Glob(filepath.Join(dir, "*.go"))
		require.NoError(t, err)
		files = append(files, in...)
	}
	names := map[string]bool{}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil && envNameRE.MatchString(s) {
					names[s] = true
				}
			}
			return true
		})
	}
	require.NotEmpty(t, names)
	return names
}

// clearEnv unsets (sets empty, which every reader takes as unset) each name
// for the test.
func clearEnv(t *testing.T, names map[string]bool) {
	for name := range names {
		t.Setenv(name, "")
	}
}

// loadedSettings are what serve would run with, given env over a clean
// environment.
func loadedSettings(t *testing.T, names map[string]bool, env map[string]string) settings {
	t.Helper()
	clearEnv(t, names)
	for k, v := range env {
		t.Setenv(k, v)
	}
	s, err := loadEnv()
	require.NoError(t, err, "env %v", env)
	require.NoError(t, loadStoreEnv(&s, storeFlags{}), "env %v", env)
	return s
}

// TestConfigurationDoc holds docs/configuration.md to the code: the same
// variables, flags that exist and name their variable, every serve flag
// documented, and each literal default the code's.
func TestConfigurationDoc(t *testing.T) {
	rows, text := readConfigDoc(t)
	inCode := envNamesInCode(t)
	inDoc := map[string]docRow{}
	for _, r := range rows {
		_, dup := inDoc[r.env]
		require.False(t, dup, "%s has two rows", r.env)
		inDoc[r.env] = r
	}
	var missing, invented []string
	for name := range inCode {
		if _, ok := inDoc[name]; !ok {
			missing = append(missing, name)
		}
	}
	for name := range inDoc {
		if !inCode[name] && !runtimeOnly[name] {
			invented = append(invented, name)
		}
	}
	sort.Strings(missing)
	sort.Strings(invented)
	require.Empty(t, missing, "the code reads these variables and %s does not list them", configDocPath)
	require.Empty(t, invented, "%s lists these variables and the code does not read them", configDocPath)

	clearEnv(t, inCode)
	serve := Command()
	root := cli.NewRoot()
	for _, r := range rows {
		if r.flag == "" {
			continue
		}
		fs := root.PersistentFlags()
		if r.server {
			fs = serve.Flags()
		}
		f := fs.Lookup(r.flag)
		require.NotNil(t, f, "%s: there is no flag --%s", r.env, r.flag)
		require.Contains(t, f.Usage, r.env, "--%s's help does not name %s", r.flag, r.env)
	}
	serve.Flags().VisitAll(func(f *pflag.Flag) {
		if r, ok := rowOfFlag(rows, f.Name); ok {
			require.True(t, r.server, "--%s is a serve flag, documented in the client's table", f.Name)
			return
		}
		for name := range inCode {
			require.NotContains(t, f.Usage, "("+name, "serve --%s names %s, whose row does not give the flag", f.Name, name)
		}
		require.Contains(t, text, "`--"+f.Name+"`", "serve --%s is not in %s", f.Name, configDocPath)
	})

	clientDefaults := map[string]func() string{"TETHER_URL": cli.ServerURL}
	for _, r := range rows {
		want, ok := r.literal()
		if !ok {
			continue
		}
		t.Run(r.env, func(t *testing.T) {
			if !r.server {
				get, ok := clientDefaults[r.env]
				require.True(t, ok, "this test does not know how to check the client default of %s", r.env)
				clearEnv(t, inCode)
				require.Equal(t, want, get())
				return
			}
			if r.flag != "" {
				if def := serve.Flags().Lookup(r.flag).DefValue; def != "" {
					require.Equal(t, want, def, "--%s's default", r.flag)
					return
				}
			}
			// Setting a variable to its documented default changes nothing.
			base := map[string]string{}
			switch {
			case strings.HasPrefix(r.env, "TETHER_ETCD_"):
				base = map[string]string{"TETHER_STORE": storeEtcd, "TETHER_ETCD_ENDPOINTS": "http://127.0.0.1:2379"}
			case strings.HasPrefix(r.env, "TETHER_POSTGRES_"):
				base = map[string]string{"TETHER_STORE": storePostgres, "TETHER_POSTGRES_URL": "postgres://127.0.0.1:5432/tether"}
			}
			unset := loadedSettings(t, inCode, base)
			base[r.env] = want
			set := loadedSettings(t, inCode, base)
			require.True(t, reflect.DeepEqual(unset, set), "%s=%s is not the default: the settings differ:\nunset: %+v\nset:   %+v", r.env, want, unset, set)
		})
	}
}

func rowOfFlag(rows []docRow, flag string) (docRow, bool) {
	for _, r := range rows {
		if r.flag == flag {
			return r, true
		}
	}
	return docRow{}, false
}
