// Package optdep is how a test skips for want of an optional dependency
// (Chromium, PostgreSQL, python3, node, a shell, jq, loop mounts...) and
// says so where people look.
//
// A skip is recorded, and Main prints one line per missing dependency
// after the package's tests, "SKIPPED (no chromium): TestA, TestB".
// `go test ./...` shows nothing of a passing package but its ok line,
// whatever the test binary writes to stdout or stderr, so on a terminal
// the lines go to the terminal itself (/dev/tty); elsewhere, or with -v,
// to stdout, which go test shows with -v, on failure, and when it tests
// the package of the current directory.
//
// $WORKSPACED_REQUIRE lists dependencies (comma-separated, or "all") that
// must be there: a test that would skip for one of them fails instead,
// so CI, which installs them, cannot pass by skipping.
package optdep

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
)

// EnvRequire names the variable that lists the required dependencies.
const EnvRequire = "WORKSPACED_REQUIRE"

var (
	mu      sync.Mutex
	skipped = map[string][]string{} // dependency → the tests it skipped
)

// Required reports whether $WORKSPACED_REQUIRE names dep (or "all").
func Required(dep string) bool {
	for _, d := range strings.Split(os.Getenv(EnvRequire), ",") {
		if d = strings.TrimSpace(d); d == dep || d == "all" {
			return true
		}
	}
	return false
}

// Skip skips t for want of dep, saying why and how to get it; when dep is
// required it fails t instead. Like t.Skip, it ends the test.
func Skip(t testing.TB, dep, why string) {
	t.Helper()
	if Required(dep) {
		t.Fatalf("%s is required (%s=%s) but missing: %s", dep, EnvRequire, os.Getenv(EnvRequire), why)
	}
	record(dep, t.Name())
	t.Skip(why)
}

// Without records that t goes on without dep, leaving out what needs it
// (reported as a skip of t); when dep is required it fails t instead.
func Without(t testing.TB, dep, why string) {
	t.Helper()
	if Required(dep) {
		t.Fatalf("%s is required (%s=%s) but missing: %s", dep, EnvRequire, os.Getenv(EnvRequire), why)
	}
	record(dep, t.Name())
	t.Log(why)
}

func record(dep, test string) {
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(skipped[dep], test) {
		skipped[dep] = append(skipped[dep], test)
	}
}

// Skipf is Skip with a formatted reason.
func Skipf(t testing.TB, dep, format string, args ...any) {
	t.Helper()
	Skip(t, dep, fmt.Sprintf(format, args...))
}

// Main runs the package's tests, then reports what they skipped (Report);
// it returns the exit code for os.Exit:
//
//	func TestMain(m *testing.M) { os.Exit(optdep.Main(m)) }
func Main(m *testing.M) int {
	code := m.Run()
	Report()
	return code
}

// Report writes the skips recorded so far, one line per dependency, where
// go test shows them (see the package comment). It writes nothing when
// nothing was skipped.
func Report() {
	lines := Lines()
	if len(lines) == 0 {
		return
	}
	var w io.Writer = os.Stdout
	if !testing.Verbose() {
		if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
			defer tty.Close()
			w = tty
		}
	}
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}

// Lines are the report's lines, by dependency:
// "SKIPPED (no chromium): TestA, TestB".
func Lines() []string {
	mu.Lock()
	defer mu.Unlock()
	deps := slices.Sorted(maps.Keys(skipped))
	out := make([]string, 0, len(deps))
	for _, d := range deps {
		out = append(out, fmt.Sprintf("SKIPPED (no %s): %s", d, strings.Join(skipped[d], ", ")))
	}
	return out
}
