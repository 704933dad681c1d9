package sqlite

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/workspace"
)

// TestReadStatusAndRebuild: ReadStatus counts tasks by status and the
// markers waiting and probes the daemon's lock; Rebuild folds the journal
// to the state the commit wrote, and refuses a missing task.
func TestReadStatusAndRebuild(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	for _, id := range []string{"t1", "t2"} {
		if _, err := s.CreateTask(ctx, workspace.NewTaskRequest{ID: id, Description: "d"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range []string{"w1", "w2"} {
		if _, err := s.WriteClaim(ctx, "t1", a, "s1"); err != nil {
			t.Fatal(err)
		}
	}
	st, err := s.ReadStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Serving || st.PID != 0 || st.MarkersWaiting != 2 || st.ByStatus["none"] != 2 || len(st.Tasks) != 2 || st.Tasks[0].MarkersWaiting != 2 || st.Live != nil {
		t.Errorf("status before a commit: %+v", st)
	}
	if _, err := s.Committer("t1").Commit(ctx, workspace.CommitRequest{}); err != nil {
		t.Fatal(err)
	}
	l, err := locking.TryAcquire(s.leadFile(), locking.Options{Agent: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if st, err = s.ReadStatus(ctx); err != nil {
		t.Fatal(err)
	}
	written, err := s.ReadState(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if !st.Serving || st.PID == 0 || st.Holder != "test" || st.MarkersWaiting != 0 || st.ByStatus[written.Status] != 1 || st.Tasks[0].JournalSeq != 2 {
		t.Errorf("status after a commit, the lock held: %+v", st)
	}
	rebuilt, err := s.Rebuild("t1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rebuilt, written) {
		t.Errorf("rebuilt %+v\nwritten %+v", rebuilt, written)
	}
	if _, err := s.Rebuild("nope"); !errors.Is(err, workspace.ErrNotFound) {
		t.Errorf("rebuild of no task: %v", err)
	}
	if _, err := s.DB().Exec(`UPDATE journal SET record = '{' WHERE task_id = 't1' AND seq = 2`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Rebuild("t1"); err == nil || errors.Is(err, workspace.ErrNotFound) {
		t.Errorf("rebuild over a record that does not parse: %v", err)
	}
}
