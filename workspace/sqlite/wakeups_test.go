package sqlite

import (
	"database/sql"
	"slices"
	"testing"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// TestLookSeesWriteInFlight: a look for waiting markers that begins while
// another process's write is heard but not yet committed (its frames are
// in the WAL, its commit not yet published: the window a watch wakes the
// daemon in) sees the marker once that write commits, rather than nothing.
func TestLookSeesWriteInFlight(t *testing.T) {
	s, _ := newStore(t)
	ctx := t.Context()
	if _, err := s.CreateTask(ctx, workspace.NewTaskRequest{ID: "t1", Description: "d", SubmittedBy: "test"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Committer("t1").Commit(ctx, workspace.CommitRequest{}); err != nil { // its first state: nothing waits
		t.Fatal(err)
	}
	if ids, err := s.waitingTasks(ctx); err != nil || len(ids) != 0 {
		t.Fatalf("waiting before any marker: %v %v", ids, err)
	}
	other, err := sql.Open("sqlite", dsn(s.Path(), "immediate"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	tx, err := other.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO markers (task_id, kind, name, body) VALUES ('t1', 'claim', '.claim.w1.x', '{}')`); err != nil {
		t.Fatal(err)
	}
	type look struct {
		ids []string
		err error
	}
	looked := make(chan look, 1)
	go func() {
		ids, err := s.waitingTasks(ctx)
		looked <- look{ids, err}
	}()
	select {
	case l := <-looked:
		t.Fatalf("the look ended while a write was in flight, seeing %v (%v): that marker would wait for the next poll", l.ids, l.err)
	case <-time.After(200 * time.Millisecond): // time for the look to begin; it must wait for the writer
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if l := <-looked; l.err != nil || !slices.Equal(l.ids, []string{"t1"}) {
		t.Fatalf("the look saw %v (%v), want t1", l.ids, l.err)
	}
}
