package bench

import (
	"context"
	"strings"
	"testing"
)

// TestStartServerEarlyExit: a daemon that exits before it holds the lock
// is reported with its last lines, at once.
func TestStartServerEarlyExit(t *testing.T) {
	// The serve arguments (root, "serve", flags) land in $0, $1, …
	cmd := []string{"sh", "-c", "echo 'cannot serve: broken' >&2; exit 3"}
	s, err := startServer(context.Background(), cmd, t.TempDir(), nil)
	if err == nil {
		s.close()
		t.Fatal("started a daemon that exited")
	}
	if !strings.Contains(err.Error(), "cannot serve: broken") || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("error %q, want the exit status and the daemon's last words", err)
	}
}
