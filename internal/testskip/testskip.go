package testskip

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// EnvFile is the variable naming the file skips are recorded in.
const EnvFile = "TETHER_TEST_SKIPS"

// Missing skips t because what (a program, a device) is not here; why says
// so in a few words ("not installed", "no /dev/fuse").
func Missing(t testing.TB, what, why string) {
	t.Helper()
	record(what, why, t.Name())
	t.Skipf("needs %s: %s", what, why)
}

// Programs skips t unless every program is on PATH, naming the first one
// missing.
func Programs(t testing.TB, programs ...string) {
	t.Helper()
	for _, p := range programs {
		if _, err := exec.LookPath(p); err != nil {
			Missing(t, p, "not installed")
		}
	}
}

// record appends the skip to the file TETHER_TEST_SKIPS names, if any.
func record(what, why, test string) {
	path := os.Getenv(EnvFile)
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	clean := strings.NewReplacer("\t", " ", "\n", " ")
	_, _ = fmt.Fprintf(f, "%s\t%s\t%s\n", clean.Replace(what), clean.Replace(why), clean.Replace(test))
}
