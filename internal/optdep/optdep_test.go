package optdep

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	_ "github.com/workspaced/workspaced/internal/raceexit"
)

// TestSkipReportsAndRequires runs a test binary whose test skips for want
// of "gizmo": without the requirement it passes and the report names the
// test; with WORKSPACED_REQUIRE=gizmo (or all) it fails saying why.
func TestSkipReportsAndRequires(t *testing.T) {
	if os.Getenv("OPTDEP_CHILD") == "1" {
		Skip(t, "gizmo", "no gizmo here (apt-get install gizmo)")
		return
	}
	run := func(require string) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.v", "-test.run=^TestSkipReportsAndRequires$")
		cmd.Env = append(os.Environ(), "OPTDEP_CHILD=1", EnvRequire+"="+require)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("")
	if err != nil || !strings.Contains(out, "SKIPPED (no gizmo): TestSkipReportsAndRequires") {
		t.Errorf("without the requirement: want a pass and the report line, got %v:\n%s", err, out)
	}
	for _, req := range []string{"gizmo", "chromium,gizmo", "all"} {
		out, err = run(req)
		if err == nil || !strings.Contains(out, "gizmo is required ("+EnvRequire+"="+req+") but missing: no gizmo here") {
			t.Errorf("%s=%s: want a failure saying gizmo is required, got %v:\n%s", EnvRequire, req, err, out)
		}
	}
}

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// TestWithoutRecords: a test that goes on without a dependency is named in
// the report like one that skipped.
func TestWithoutRecords(t *testing.T) {
	if Required("widget") {
		t.Skip("widget is required here: Without would fail the test")
	}
	t.Cleanup(func() { mu.Lock(); delete(skipped, "widget"); mu.Unlock() }) // not a dependency of this package
	Without(t, "widget", "no widget: the widget part is left out")
	if l := Lines(); !slices.Contains(l, "SKIPPED (no widget): TestWithoutRecords") {
		t.Errorf("the report lacks the test: %q", l)
	}
}
