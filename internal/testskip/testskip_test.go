package testskip

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSkipsAreRecordedAndSummarized runs two skipping tests in a child test
// binary (this one, re-run) and checks the line the summary script prints.
func TestSkipsAreRecordedAndSummarized(t *testing.T) {
	if os.Getenv("TESTSKIP_CHILD") == "1" {
		t.Skip("the child run")
	}
	skips := filepath.Join(t.TempDir(), "skips")
	cmd := exec.Command(os.Args[0], "-test.run", "^TestChild", "-test.count=1")
	cmd.Env = append(os.Environ(), "TESTSKIP_CHILD=1", EnvFile+"="+skips)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child run: %v\n%s", err, out)
	}
	b, err := os.ReadFile(skips)
	if err != nil {
		t.Fatal(err)
	}
	want := "no-such-program-4c1e\tnot installed\tTestChildNeedsAProgram\n" +
		"no-such-program-4c1e\tnot installed\tTestChildNeedsItToo\n" +
		"a device\tno /dev/thing\tTestChildNeedsADevice\n"
	if string(b) != want {
		t.Fatalf("recorded:\n%q\nwant:\n%q", b, want)
	}
	if _, err := exec.LookPath("awk"); err != nil {
		t.Skip("the summary script needs awk")
	}
	out, err := exec.Command("awk", "-f", filepath.Join("..", "..", ".ci", "skip-summary.awk"), skips).CombinedOutput()
	if err != nil {
		t.Fatalf("summary: %v\n%s", err, out)
	}
	line := strings.TrimSpace(string(out))
	if line != "skipped: 2 tests need no-such-program-4c1e (not installed), 1 needs a device (no /dev/thing)" {
		t.Fatalf("summary line: %q", line)
	}
}

func TestChildNeedsAProgram(t *testing.T) {
	if os.Getenv("TESTSKIP_CHILD") != "1" {
		t.Skip("run by TestSkipsAreRecordedAndSummarized")
	}
	Programs(t, "sh", "no-such-program-4c1e")
	t.Fatal("not skipped")
}

func TestChildNeedsItToo(t *testing.T) {
	if os.Getenv("TESTSKIP_CHILD") != "1" {
		t.Skip("run by TestSkipsAreRecordedAndSummarized")
	}
	Programs(t, "no-such-program-4c1e")
	t.Fatal("not skipped")
}

func TestChildNeedsADevice(t *testing.T) {
	if os.Getenv("TESTSKIP_CHILD") != "1" {
		t.Skip("run by TestSkipsAreRecordedAndSummarized")
	}
	Missing(t, "a device", "no /dev/thing")
	t.Fatal("not skipped")
}
