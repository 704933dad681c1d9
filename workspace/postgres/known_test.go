package postgres

import (
	"context"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// What the daemon remembers of the states it wrote is used only while
// the states row holds those very bytes: a state restored from a backup
// is folded forward from the journal as without it, and a row changed
// behind the daemon's back is decoded and the next state checked whole,
// so an entry broken there is refused even though the commit does not
// change it.
func TestKnownStatesOnlyForTheirOwnBytes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	epoch := lead(t, s, "test")
	plannedTask(t, s, "t1", 4, epoch)
	k := s.Committer("t1").(*sqlstore.Committer)
	req := workspace.CommitRequest{Lead: epochLead(epoch)}
	commitOne := func(sub string) workspace.Applied {
		t.Helper()
		drop(t, s, "t1", workspace.KindClaim, workspace.Marker{AgentID: "w1", SubtaskID: sub})
		a, err := k.Commit(ctx, req)
		if err != nil || a.Taken != 1 {
			t.Fatalf("commit of the claim of %s: %+v, %v", sub, a, err)
		}
		return a
	}
	commitOne("s0")
	if doc, st := k.Known(); doc == "" || st.JournalSeq == 0 {
		t.Fatalf("the state written is not remembered: %q, %+v", doc, st)
	}
	commitOne("s1")
	checkRebuild(t, s, "t1")

	// A backup restored: the row holds other bytes; the next commit folds
	// the journal after the backup again, and the state matches a replay.
	if _, err := s.RestoreBackup(ctx, "t1", "", func([]byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
	commitOne("s2")
	st := checkRebuild(t, s, "t1")
	for _, sub := range []string{"s0", "s1", "s2"} {
		if st.Subtasks[sub].Status != "in_progress" {
			t.Fatalf("after the restore, subtask %s is %q, want in_progress", sub, st.Subtasks[sub].Status)
		}
	}

	// The row changed behind the daemon's back with a broken entry the
	// next commit does not touch: refused, nothing written.
	var doc string
	if err := s.pool.QueryRow(ctx, "SELECT doc FROM states WHERE task_id = 't1'").Scan(&doc); err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(doc, `"status": "in_progress"`, `"status": "bogus"`, 1)
	if broken == doc {
		t.Fatalf("no in_progress subtask to break in %s", doc)
	}
	if _, err := s.pool.Exec(ctx, "UPDATE states SET doc = $1 WHERE task_id = 't1'", broken); err != nil {
		t.Fatal(err)
	}
	drop(t, s, "t1", workspace.KindClaim, workspace.Marker{AgentID: "w1", SubtaskID: "s3"})
	if _, err := k.Commit(ctx, req); err == nil || !strings.Contains(err.Error(), "would not validate") {
		t.Fatalf("commit over a broken state row: %v, want it refused as not valid", err)
	}
	var after string
	if err := s.pool.QueryRow(ctx, "SELECT doc FROM states WHERE task_id = 't1'").Scan(&after); err != nil || after != broken {
		t.Fatalf("the refused commit wrote the state (%v)", err)
	}
}
