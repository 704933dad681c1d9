package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
	"github.com/workspaced/workspaced/workspace/statecheck"
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

// The update made of edits joins the row's bytes and the edits' wherever
// they fall: at the start, in the middle only (the end kept), at the end,
// side by side, with characters of several bytes on either side; edits
// that would cut a character in two are refused, the row left as it was.
func TestEditsJoinTheRowsBytes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	epoch := lead(t, s, "test")
	plannedTask(t, s, "t1", 3, epoch)
	base := `{"a": "é日本", "b": "✓✓", "c": "end"}`
	for _, tc := range []struct {
		name  string
		edits []statecheck.Edit
		bad   bool
	}{
		{"the start", []statecheck.Edit{{At: 0, Len: 1, Text: []byte("[")}}, false},
		{"the middle only", []statecheck.Edit{{At: 9, Len: 3, Text: []byte("x✓")}}, false},
		{"a character cut", []statecheck.Edit{{At: 8, Len: 3, Text: []byte("日")}}, true},
		{"the end", []statecheck.Edit{{At: len(base) - 1, Len: 1, Text: []byte(`, "d": 1}`)}}, false},
		{"side by side", []statecheck.Edit{{At: 1, Len: 2, Text: []byte("x")}, {At: 3, Len: 0, Text: []byte("yz")}}, false},
		{"everything", []statecheck.Edit{{At: 0, Len: len(base), Text: []byte(`{}`)}}, false},
		{"nothing replaced", []statecheck.Edit{{At: 5, Len: 0, Text: []byte("")}}, false},
	} {
		if _, err := s.pool.Exec(ctx, "UPDATE states SET doc = $1 WHERE task_id = 't1'", base); err != nil {
			t.Fatal(err)
		}
		want := base
		for k := len(tc.edits) - 1; k >= 0; k-- {
			e := tc.edits[k]
			want = want[:e.At] + string(e.Text) + want[e.At+e.Len:]
		}
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			b := &pgx.Batch{}
			commitTx{txOf(tx), tx}.queueEdits(b, sqlstore.CommitWrite{TaskID: "t1", Seq: 1, Epoch: epoch, Version: 100,
				Edits: tc.edits, PrevBytes: len(base)})
			return tx.SendBatch(ctx, b).Close()
		})
		var got string
		if err == nil {
			err = s.pool.QueryRow(ctx, "SELECT doc FROM states WHERE task_id = 't1'").Scan(&got)
		}
		switch {
		case tc.bad && (err == nil || got != ""):
			t.Errorf("%s: %q, %v; want it refused", tc.name, got, err)
		case tc.bad:
			if err := s.pool.QueryRow(ctx, "SELECT doc FROM states WHERE task_id = 't1'").Scan(&got); err != nil || got != base {
				t.Errorf("%s: refused, the row holds %q (%v)", tc.name, got, err)
			}
		case err != nil || got != want:
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, want)
		}
	}
}
