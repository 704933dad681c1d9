package files_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/internal/fixture"
	"github.com/workspaced/workspaced/workspace"
)

// TestOpsReadyzStartupScan: over a tree of 2,000 tasks, /readyz answers
// 503 while the start-up scan is held up by a task's lock, /healthz 200
// all along, and /readyz 200 once the lock is let go.
func TestOpsReadyzStartupScan(t *testing.T) {
	w := scaleWS(t, 1500, 500)
	x := w.Open()
	if err := fixture.PrepareTask(context.Background(), x, "held", 6); err != nil {
		t.Fatal(err)
	}
	release := holdTask(t, x, "held")
	u := start(w, "--listen", "127.0.0.1:0", "--log-level", "info").OpsURL()
	// The start-up scan cannot end while the task's lock is held.
	readyz(t, u, http.StatusServiceUnavailable, "start-up scan")
	if code, _ := clitest.HTTPGet(u + "healthz"); code != http.StatusOK {
		t.Fatalf("/healthz during the scan: %d", code)
	}
	release()
	readyz(t, u, http.StatusOK, "ready")
}

// scaleWS is a workspace written by the scale fixture.
func scaleWS(t *testing.T, active, finished int) *clitest.WS {
	t.Helper()
	dir := t.TempDir()
	root := filepath.Join(dir, "workspace")
	w := &clitest.WS{T: t, Root: root, Dir: dir, Env: append(clitest.CleanEnv(), "WORKSPACE_ROOT="+root)}
	if err := (fixture.ScaleTree{Active: active, Finished: finished}).Write(w.Root); err != nil {
		t.Fatal(err)
	}
	return w
}

// holdTask drops a claim in task id and holds the task's lock, so the
// daemon's commit of it waits; release lets it go on.
func holdTask(t *testing.T, x *workspace.Workspace, id string) (release func()) {
	t.Helper()
	lk, err := x.LockTask(context.Background(), id, "ops-test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.WriteClaim(context.Background(), id, "ops", "st_6"); err != nil {
		t.Fatal(err)
	}
	return func() { lk.Release() }
}

// readyz waits until /readyz answers code with a body holding word.
func readyz(t *testing.T, u string, code int, word string) {
	t.Helper()
	clitest.Eventually(t, fmt.Sprintf("/readyz %d %q", code, word), func() (bool, string) {
		c, b := clitest.HTTPGet(u + "readyz")
		return c == code && strings.Contains(b, word), fmt.Sprintf("%d %s", c, b)
	})
}
