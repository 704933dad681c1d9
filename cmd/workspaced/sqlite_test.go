package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/workspace/sqlite"
)

// TestSQLiteRoot runs the CLI on a sqlite: root as a user does: init
// (twice), a task, the daemon serving it (a second one exits 4), and a
// claim waited for until the daemon's verdict, read from the database.
func TestSQLiteRoot(t *testing.T) {
	t.Parallel()
	root := "sqlite:" + filepath.Join(t.TempDir(), "agents.db")
	w := &ws{clitest.At(t, root)}
	if out, all := w.Ok("init"), fmt.Sprintf("%d migrations applied", sqlite.SchemaVersion()); !strings.Contains(out, all) {
		t.Fatalf("init printed %q", out)
	}
	if out := w.Ok("init"); !strings.Contains(out, "0 migrations applied") {
		t.Fatalf("second init printed %q", out)
	}
	w.Task("t1")
	// Serving once the daemon holds the database's lock (agents.db.lock).
	log := w.Serve().Log
	// The verdict of a claim before any plan: lost (exit 4), with why.
	r := w.Run("claim", "--task", "t1", "--agent", "worker_1", "--subtask", "s1", "--wait", "30s", "--json")
	if r.Code != 4 {
		t.Fatalf("claim --wait: %v (daemon log: %s)", r, log.String())
	}
	var v struct {
		Verdict string `json:"verdict"`
		Seq     int64  `json:"seq"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &v); err != nil || v.Verdict != "lost" || v.Seq != 1 {
		t.Fatalf("claim --wait printed %q (%v), want verdict lost at seq 1", r.Stdout, err)
	}
	w.Fails(4, "another daemon serves this workspace", "serve")
}
