package main

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/workspace/sqlite"
)

// TestSQLiteRoot runs the CLI on a sqlite: root as a user does: init
// (twice), a task, the daemon serving it (a second one exits 4), and a
// claim waited for until the daemon's verdict, read from the database.
func TestSQLiteRoot(t *testing.T) {
	dir := t.TempDir()
	root := "sqlite:" + filepath.Join(dir, "agents.db")
	w := &ws{&clitest.WS{T: t, Dir: dir, Env: append(clitest.CleanEnv(), "WORKSPACE_ROOT="+root), Root: root}}
	if out, all := w.Ok("init"), fmt.Sprintf("%d migrations applied", sqlite.SchemaVersion()); !strings.Contains(out, all) {
		t.Fatalf("init printed %q", out)
	}
	if out := w.Ok("init"); !strings.Contains(out, "0 migrations applied") {
		t.Fatalf("second init printed %q", out)
	}
	w.Task("t1")
	serve := exec.Command(clitest.Bin(), "--root", root, "serve", "--log-level", "warn")
	serve.Env = clitest.CleanEnv()
	log := &clitest.Log{}
	serve.Stdout, serve.Stderr = log, log
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = serve.Wait(); close(done) }()
	t.Cleanup(func() { _ = serve.Process.Kill(); <-done })

	// Serving once the daemon holds the database's lock.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if held, _, _ := locking.Held(filepath.Join(dir, "agents.db.lock")); held {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon does not hold agents.db.lock: %s", log.String())
		}
	}
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
