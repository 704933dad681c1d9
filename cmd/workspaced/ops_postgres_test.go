package main

import (
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/clitest"
)

// On PostgreSQL a standby's /readyz is 503 "standby", and 200 once it has
// taken over from a leader killed with SIGKILL (within the lease).
func TestOpsPostgresStandbyReadyz(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: the standby test waits for a lease")
	}
	w := newPGWS(t)
	opsArgs := []string{"--standby", "--lease", "2s", "--listen", "127.0.0.1:0", "--log-level", "info"}
	a := w.Start(opsArgs...)
	epochA := w.leader(a.Cmd.Process.Pid, 30*time.Second)
	ua := a.OpsURL()
	clitest.AwaitReadyz(t, ua, http.StatusOK, "ready")
	b := w.Start(opsArgs...)
	ub := b.OpsURL()
	clitest.AwaitReadyz(t, ub, http.StatusServiceUnavailable, "standby")
	scrapeUntil(t, ub, map[string]float64{"workspaced_leading": 0, "workspaced_standby": 1})
	scrapeUntil(t, ua, map[string]float64{"workspaced_leading": 1, "workspaced_markers_waiting": 0, "workspaced_lease_epoch": float64(epochA)})
	_ = a.Cmd.Process.Signal(syscall.SIGKILL)
	<-a.Done()
	clitest.AwaitReadyz(t, ub, http.StatusOK, "ready")
	body := scrapeUntil(t, ub, map[string]float64{"workspaced_leading": 1, "workspaced_standby": 0})
	if e := sample(body, "workspaced_lease_epoch"); e <= float64(epochA) {
		t.Fatalf("the standby leads with epoch %v, not past the killed leader's %d", e, epochA)
	}
	promtoolCheckMetrics(t, body)
}
