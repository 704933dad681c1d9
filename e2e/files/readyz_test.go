package files_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/internal/fixture"
)

// TestOpsReadyzStartupScan: over a tree of 200 tasks, /readyz answers
// 503 while the start-up scan is held up by a task's lock, /healthz 200
// all along, and /readyz 200 once the lock is let go.
func TestOpsReadyzStartupScan(t *testing.T) {
	t.Parallel()
	w := clitest.NewScale(t, 150, 50)
	x := w.Open()
	if err := fixture.PrepareTask(context.Background(), x, "held", 6); err != nil {
		t.Fatal(err)
	}
	release := clitest.HoldTask(t, x, "held")
	u := start(w, "--listen", "127.0.0.1:0", "--log-level", "info").OpsURL()
	// The start-up scan cannot end while the task's lock is held.
	clitest.AwaitReadyz(t, u, http.StatusServiceUnavailable, "start-up scan")
	if code, _ := clitest.HTTPGet(u + "healthz"); code != http.StatusOK {
		t.Fatalf("/healthz during the scan: %d", code)
	}
	release()
	clitest.AwaitReadyz(t, u, http.StatusOK, "ready")
}
