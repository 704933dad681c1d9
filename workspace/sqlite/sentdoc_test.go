package sqlite

import (
	"context"
	"fmt"
	"testing"

	"github.com/workspaced/workspaced/internal/fixture"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// A commit sends its state from the encoder's own bytes, which the next
// commit of the task writes over: every row a commit wrote must still
// hold, byte for byte, the document that commit wrote after the commits
// that follow it (the driver copied it as it sent it), the state and
// each backup alike.
func TestCommittedDocumentsOutliveTheEncodersBytes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	const task, claims = "t1", 14 // more commits than backups kept: the prune runs too
	if err := fixture.PrepareTask(ctx, s, task, 40); err != nil {
		t.Fatal(err)
	}
	k := s.Committer(task).(*sqlstore.Committer)
	commit := func(what string) string {
		t.Helper()
		if a, err := k.Commit(ctx, workspace.CommitRequest{}); err != nil || a.Taken != 1 {
			t.Fatalf("commit of %s: %+v, %v", what, a, err)
		}
		doc, _ := k.Known()
		return doc
	}
	wrote := map[int64]string{} // journal_seq -> the document written
	var seq int64 = 1
	wrote[seq] = commit("the plan")
	if err := fixture.ApprovePlan(ctx, s, task); err != nil {
		t.Fatal(err)
	}
	seq++
	wrote[seq] = commit("the review")
	for i := 1; i <= claims; i++ {
		if _, err := s.WriteClaim(ctx, task, fmt.Sprintf("agent_%d", i), fmt.Sprintf("st_%d", i)); err != nil {
			t.Fatal(err)
		}
		seq++
		wrote[seq] = commit(fmt.Sprintf("claim %d", i))
	}
	rows, err := s.DB().QueryContext(ctx, "SELECT journal_seq, "+assembledDoc+" FROM state_history s WHERE task_id = $1 ORDER BY n", task)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var (
			at  int64
			doc string
		)
		if err := rows.Scan(&at, &doc); err != nil {
			t.Fatal(err)
		}
		want, ok := wrote[at]
		if !ok || doc != want {
			t.Fatalf("the row at journal_seq %d holds %d bytes other than the %d its commit wrote", at, len(doc), len(want))
		}
		n++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if keep := workspace.DefaultBackupsKeep + 1; n != keep {
		t.Fatalf("%d rows of states kept, want the state and %d backups", n, keep-1)
	}
}
