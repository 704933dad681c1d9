package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// A commit that follows the committer's own sends the edits of the
// document, not the document, and the row holds, commit after commit,
// the very document the committer made: claims, failures whose errors
// hold characters of several bytes (the edits count characters), new
// workers; the journal replays to it. A row whose document is not the
// one the edits were made for (changed behind the daemon's back with its
// stamp kept) fails the commit, and the next one writes it whole.
func TestCommitsSendTheirEdits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	epoch := lead(t, s, "test")
	plannedTask(t, s, "t1", 2000, epoch)
	k := s.Committer("t1").(*sqlstore.Committer)
	req := workspace.CommitRequest{Lead: epochLead(epoch)}
	commit := func(kind string, m workspace.Marker) {
		t.Helper()
		drop(t, s, "t1", kind, m)
		if a, err := k.Commit(ctx, req); err != nil || a.Taken != 1 {
			t.Fatalf("commit of %s %+v: %+v, %v", kind, m, a, err)
		}
		doc, _ := k.Known()
		var row string
		if err := s.pool.QueryRow(ctx, "SELECT doc FROM states WHERE task_id = 't1'").Scan(&row); err != nil {
			t.Fatal(err)
		}
		if row != doc {
			t.Fatalf("after %s %+v the row holds\n%s\nnot the document made\n%s", kind, m, row, doc)
		}
	}
	for i := range 60 {
		sub, agent := fmt.Sprintf("s%d", i*33), fmt.Sprintf("w%d", i%7)
		commit(workspace.KindClaim, workspace.Marker{AgentID: agent, SubtaskID: sub})
		if i%3 == 0 {
			out := fmt.Sprintf("outputs/%s.json", sub)
			put(t, s, "t1", out, map[string]any{"subtask_id": sub, "status": "failed", "error": "échec ✓"})
			commit(workspace.KindDone, workspace.Marker{AgentID: agent, SubtaskID: sub, Status: "failed", OutputFile: out,
				Error: fmt.Sprintf("échec n°%d: 日本語 ✓ \u2028 <&>", i)})
		}
	}
	if st := checkRebuild(t, s, "t1"); !strings.Contains(st.Subtasks["s0"].Error, "日本語") {
		t.Fatalf("no error of several bytes a character in the state: s0 is %+v", *st.Subtasks["s0"])
	}

	// The row's document changed with its stamp kept (the version's
	// trigger off): the edits are refused, nothing is written; the next
	// commit reads the row and writes its document whole.
	if _, err := s.pool.Exec(ctx, "ALTER TABLE states DISABLE TRIGGER USER"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `UPDATE states SET doc = replace(doc, '"phase": "', '"phase": "x') WHERE task_id = 't1'`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, "ALTER TABLE states ENABLE TRIGGER USER"); err != nil {
		t.Fatal(err)
	}
	var before string
	if err := s.pool.QueryRow(ctx, "SELECT doc FROM states WHERE task_id = 't1'").Scan(&before); err != nil {
		t.Fatal(err)
	}
	drop(t, s, "t1", workspace.KindClaim, workspace.Marker{AgentID: "w1", SubtaskID: "s1999"})
	if _, err := k.Commit(ctx, req); err == nil || !strings.Contains(err.Error(), "does not hold the document its edits were made for") {
		t.Fatalf("commit of edits over another document: %v, want it refused", err)
	}
	var after string
	if err := s.pool.QueryRow(ctx, "SELECT doc FROM states WHERE task_id = 't1'").Scan(&after); err != nil || after != before {
		t.Fatalf("the refused commit wrote the state (%v)", err)
	}
	if a, err := k.Commit(ctx, req); err != nil || a.Taken != 1 {
		t.Fatalf("the commit after: %+v, %v", a, err)
	}
	doc, _ := k.Known()
	var row string
	if err := s.pool.QueryRow(ctx, "SELECT doc FROM states WHERE task_id = 't1'").Scan(&row); err != nil || row != doc {
		t.Fatalf("after the whole write the row is not the document made (%v)", err)
	}
	if !strings.Contains(row, `"phase": "x`) {
		t.Fatalf("the whole write was not made from the row's document: %.300s", row)
	}
}
