// Package bench_test runs `workspaced bench` through the binary, whole
// workloads at a time: the quick workload on files, on SQLite and on
// PostgreSQL, and the paired rounds of a daemon against itself on each.
// Each checks the report's shape and its internal consistency, never a
// timing: the figures depend on the machine.
package bench_test

import (
	"os"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"

	_ "github.com/workspaced/workspaced/internal/raceexit"
)

// TestMain runs the tests, 8 at once: they wait on their daemons and agents.
func TestMain(m *testing.M) {
	clitest.Waiting(8)
	os.Exit(clitest.Main(m))
}

// run runs the binary with args in the test's environment, without
// WORKSPACE_ROOT: the args name the root.
func run(t *testing.T, args ...string) clitest.Result {
	t.Helper()
	r, err := clitest.Exec(t.TempDir(), clitest.CleanEnv(), "", args...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
