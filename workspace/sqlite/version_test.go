package sqlite

import (
	"context"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/fixture"
	"github.com/workspaced/workspaced/workspace"
)

// The states row's version says which write it holds: each commit raises
// it by one, and so does any other update, a restore or an UPDATE that
// leaves it as it was (the trigger), so the committer reads the document
// again and folds from what the row holds, not from what it wrote last.
func TestStateVersionFollowsEveryWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	if err := fixture.PrepareTask(ctx, s, "t1", 6); err != nil {
		t.Fatal(err)
	}
	c := s.Committer("t1")
	commit := func() {
		t.Helper()
		if _, err := c.Commit(ctx, workspace.CommitRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	commit()
	if err := fixture.ApprovePlan(ctx, s, "t1"); err != nil {
		t.Fatal(err)
	}
	commit()
	version := func() (v int64) {
		t.Helper()
		if err := s.DB().QueryRowContext(ctx, "SELECT version FROM states WHERE task_id = 't1'").Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	claim := func(sub string) {
		t.Helper()
		if _, err := s.WriteClaim(ctx, "t1", "w_"+sub, sub); err != nil {
			t.Fatal(err)
		}
		commit()
	}
	v0 := version()
	claim("st_1")
	if v := version(); v != v0+1 {
		t.Fatalf("version after a commit %d, want %d", v, v0+1)
	}
	if _, err := s.DB().ExecContext(ctx, "UPDATE states SET updated_at = updated_at WHERE task_id = 't1'"); err != nil {
		t.Fatal(err)
	}
	if v := version(); v != v0+2 {
		t.Fatalf("version after an update that left it %d, want %d (raised by the trigger)", v, v0+2)
	}
	claim("st_2")
	if _, err := s.RestoreBackup(ctx, "t1", "", func([]byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if v := version(); v != v0+4 {
		t.Fatalf("version after a restore %d, want %d", v, v0+4)
	}
	// The restored state is one commit behind: the next commit folds the
	// journal after it again, st_2's claim included.
	claim("st_3")
	st, err := s.ReadState(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"st_1", "st_2", "st_3"} {
		if st.Subtasks[sub] == nil || st.Subtasks[sub].Status != "in_progress" {
			t.Fatalf("after the restore, subtask %s is %+v, want in_progress", sub, st.Subtasks[sub])
		}
	}
	// The row changed behind the committer's back, its version left as
	// it was: the trigger raises it, the committer reads the document
	// and refuses the broken entry the next commit does not touch.
	var doc string
	if err := s.DB().QueryRowContext(ctx, "SELECT doc FROM states WHERE task_id = 't1'").Scan(&doc); err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(doc, `"status": "in_progress"`, `"status": "bogus"`, 1)
	if _, err := s.DB().ExecContext(ctx, "UPDATE states SET doc = $1 WHERE task_id = 't1'", broken); err != nil || broken == doc {
		t.Fatalf("break the state: %v (changed: %v)", err, broken != doc)
	}
	if _, err := s.WriteClaim(ctx, "t1", "w_st_4", "st_4"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Commit(ctx, workspace.CommitRequest{}); err == nil || !strings.Contains(err.Error(), "would not validate") {
		t.Fatalf("commit over a state changed behind its back: %v, want it refused as not valid", err)
	}
	var n int
	if err := s.DB().QueryRowContext(ctx, "SELECT count(*) FROM backups WHERE task_id = 't1' AND doc <> ''").Scan(&n); err != nil || n < 3 {
		t.Fatalf("%d backups with a document (%v), want one a commit", n, err)
	}
}
