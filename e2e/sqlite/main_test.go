// Package sqlite_test runs the workspaced binary on sqlite: roots with
// real processes: agents in other languages (on PostgreSQL too, where an
// agent has a worker for each store), contention, crashes and faults.
package sqlite_test

import (
	"os"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"

	_ "github.com/workspaced/workspaced/internal/raceexit"
)

// TestMain runs the tests, four at once: they wait on the daemons and the
// binaries they start far more than they compute.
func TestMain(m *testing.M) {
	clitest.Waiting(4)
	os.Exit(clitest.Main(m))
}

// TestServeAndClaim: init, a task, the daemon, and a claim waited for
// until the daemon's verdict (lost: no plan yet).
func TestServeAndClaim(t *testing.T) {
	t.Parallel()
	w, _ := clitest.NewSQLite(t)
	w.Task("t1")
	w.Serve()
	r := w.Run("claim", "--task", "t1", "--agent", "worker_1", "--subtask", "s1", "--wait", "30s")
	if r.Code != 4 || !strings.Contains(r.Stdout+r.Stderr, "lost") {
		t.Fatalf("claim --wait: %v", r)
	}
}
