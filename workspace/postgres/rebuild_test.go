package postgres

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/workspaced/workspaced/workspace"
)

// TestRebuildAndStatus folds a task's journal again and compares with the
// state the commits wrote, then reads the status before and after a
// marker is applied.
func TestRebuildAndStatus(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	st, err := s.ReadStatus(ctx)
	if err != nil || st.Serving || st.Holder != "" || len(st.Tasks) != 0 {
		t.Fatalf("status of an empty workspace: %+v, %v", st, err)
	}
	epoch := lead(t, s, "test-daemon")
	plannedTask(t, s, "t1", 2, epoch)
	if err := s.PutTask(ctx, workspace.Task{ID: "t2", Description: "no state yet"}); err != nil {
		t.Fatal(err)
	}
	drop(t, s, "t1", workspace.KindClaim, workspace.Marker{AgentID: "w1", SubtaskID: "s0"})
	drop(t, s, "t1", workspace.KindClaim, workspace.Marker{AgentID: "w2", SubtaskID: "s1"})

	st, err = s.ReadStatus(ctx)
	if err != nil || !st.Serving || st.Holder != "test-daemon" || st.Epoch != epoch || st.ExpiresAt == nil {
		t.Fatalf("status, leading: %+v, %v", st, err)
	}
	if st.MarkersWaiting != 2 || st.ByStatus["executing"] != 1 || st.ByStatus["none"] != 1 || len(st.Tasks) != 2 ||
		st.Tasks[0].ID != "t1" || st.Tasks[0].MarkersWaiting != 2 || st.Tasks[1].Status != "none" {
		t.Fatalf("status with two claims waiting: %+v", st)
	}

	commitAll(t, s, "t1", epoch)
	want, err := s.ReadState(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Rebuild("t1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(normalize(t, got), normalize(t, want)) || got.JournalSeq != 4 {
		t.Fatalf("rebuild differs from the state written:\nstate   %+v\nrebuilt %+v", want, got)
	}
	if st, err = s.ReadStatus(ctx); err != nil || st.MarkersWaiting != 0 || st.Tasks[0].JournalSeq != 4 {
		t.Fatalf("status after the commit: %+v, %v", st, err)
	}

	// A state row that is not the fold of the journal is told apart, and
	// a state row that does not parse is reported, not fatal.
	if _, err := s.pool.Exec(ctx, `UPDATE states SET doc = replace(doc, '"w2"', '"someone"') WHERE task_id = 't1'`); err != nil {
		t.Fatal(err)
	}
	tampered, _ := s.ReadState(ctx, "t1")
	if again, err := s.Rebuild("t1"); err != nil || reflect.DeepEqual(normalize(t, again), normalize(t, tampered)) {
		t.Fatalf("rebuild matched a tampered state: %v", err)
	}
	if _, err := s.pool.Exec(ctx, `UPDATE states SET doc = '{"status":' WHERE task_id = 't1'`); err != nil {
		t.Fatal(err)
	}
	if st, err = s.ReadStatus(ctx); err != nil || st.ByStatus["invalid"] != 1 || st.Tasks[0].Error == "" {
		t.Fatalf("status with a broken state row: %+v, %v", st, err)
	}

	if _, err := s.Rebuild("nope"); !errors.Is(err, workspace.ErrNotFound) {
		t.Fatalf("rebuild of no task: %v, want not found", err)
	}
	// A journal record that does not parse is an error naming it.
	if _, err := s.pool.Exec(ctx, `UPDATE journal SET record = 'not json' WHERE task_id = 't1' AND seq = 3`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Rebuild("t1"); err == nil {
		t.Fatal("rebuild over a broken journal record: no error")
	}

	if err := s.Release(ctx, epoch); err != nil {
		t.Fatal(err)
	}
	if st, err = s.ReadStatus(ctx); err != nil || st.Serving {
		t.Fatalf("status after release: %+v, %v", st, err)
	}
}
