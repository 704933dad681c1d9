package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/workspaced/workspaced/workspace"
)

// TestFaultFull: a commit SQLite refuses because the database is full
// (SQLITE_FULL, here by max_page_count on the daemon's commit connection) is a
// disk_full fault with its hint, as ENOSPC is on the file tree, and
// commits nothing; once there is room the same markers commit.
func TestFaultFull(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	if _, err := s.CreateTask(ctx, workspace.NewTaskRequest{ID: "t1", Description: "d"}); err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		if _, err := s.WriteClaim(ctx, "t1", fmt.Sprintf("agent_%03d", i), "s1"); err != nil {
			t.Fatal(err)
		}
	}
	var pages int
	if err := s.DB().QueryRow("PRAGMA page_count").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := s.cdb.Exec(fmt.Sprintf("PRAGMA max_page_count = %d", pages)); err != nil {
		t.Fatal(err)
	}
	_, err := s.Committer("t1").Commit(ctx, workspace.CommitRequest{Max: 200})
	if err == nil {
		t.Fatal("commit into a full database succeeded")
	}
	if k := workspace.FaultKind(err); k != workspace.FaultDiskFull {
		t.Errorf("fault kind %q of %v, want %q", k, err, workspace.FaultDiskFull)
	}
	if workspace.FaultHint(err) == "" {
		t.Errorf("no hint for %v", err)
	}
	if recs, err := s.ReadJournal(ctx, "t1"); err != nil || len(recs) != 0 {
		t.Errorf("journal after a refused commit: %d records, %v", len(recs), err)
	}
	if _, err := s.cdb.Exec("PRAGMA max_page_count = 1073741823"); err != nil {
		t.Fatal(err)
	}
	a, err := s.Committer("t1").Commit(ctx, workspace.CommitRequest{Max: 200})
	if err != nil || a.Taken != 200 {
		t.Fatalf("commit once there is room: %+v, %v", a, err)
	}
}

// TestFaultReadOnly: a write to a database SQLite may only read is a
// read_only fault with its hint; other errors are left as they are.
func TestFaultReadOnly(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ro, err := sql.Open("sqlite", "file:"+s.Path()+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	_, err = ro.Exec("DELETE FROM tasks")
	if err == nil {
		t.Fatal("a write through a read-only connection succeeded")
	}
	err = fault(err)
	if k := workspace.FaultKind(err); k != workspace.FaultReadOnly || workspace.FaultHint(err) == "" {
		t.Errorf("fault kind %q, hint %q of %v", k, workspace.FaultHint(err), err)
	}
	_, err = ro.Exec("SELECT * FROM no_such_table")
	if got := fault(err); got != err || workspace.FaultKind(got) != workspace.FaultOther {
		t.Errorf("fault(%v) = %v", err, got)
	}
	if fault(nil) != nil {
		t.Error("fault(nil) is not nil")
	}
}
