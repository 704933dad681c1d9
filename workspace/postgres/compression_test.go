package postgres

import (
	"context"
	"testing"

	"github.com/workspaced/workspaced/workspace"
)

// TestLargeValuesCompressedWithLZ4: a state over the TOAST threshold
// (a task of 400 subtasks: about 30 KB), its backup, and the connection's
// own setting name lz4 where the server has it, so PostgreSQL does not
// spend pglz's CPU on every commit of a wide task; a reader gets the
// document back whole either way.
func TestLargeValuesCompressedWithLZ4(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	var lz4 bool
	if err := s.pool.QueryRow(ctx, `SELECT 'lz4' = ANY (enumvals) FROM pg_settings WHERE name = 'default_toast_compression'`).Scan(&lz4); err != nil {
		t.Fatal(err)
	}
	if !lz4 {
		t.Skip("this PostgreSQL was built without lz4: its values stay pglz")
	}
	var setting string
	if err := s.pool.QueryRow(ctx, "SHOW default_toast_compression").Scan(&setting); err != nil || setting != "lz4" {
		t.Fatalf("default_toast_compression = %q (%v), want lz4 on the store's connections", setting, err)
	}
	epoch := lead(t, s, "test")
	plannedTask(t, s, "t1", 400, epoch)
	// A claim: the approved state of 400 subtasks becomes a backup.
	drop(t, s, "t1", workspace.KindClaim, workspace.Marker{AgentID: "w1", SubtaskID: "s0"})
	commitAll(t, s, "t1", epoch)
	var size int
	var method *string
	if err := s.pool.QueryRow(ctx, "SELECT octet_length(doc), pg_column_compression(doc) FROM states WHERE task_id = 't1'").Scan(&size, &method); err != nil {
		t.Fatal(err)
	}
	if size < 8<<10 || method == nil || *method != "lz4" {
		t.Errorf("the states row: %d bytes compressed with %v, want a document over 8 KB compressed with lz4", size, method)
	}
	var large, other int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_column_compression(doc) = 'lz4'),
		count(*) FILTER (WHERE pg_column_compression(doc) IS DISTINCT FROM 'lz4')
		FROM backups WHERE task_id = 't1' AND octet_length(doc) > 8192`).Scan(&large, &other); err != nil {
		t.Fatal(err)
	}
	if large == 0 || other != 0 {
		t.Errorf("backups of the large state: %d compressed with lz4, %d otherwise; want one or more, all lz4", large, other)
	}
	st, err := s.ReadState(ctx, "t1")
	if err != nil || len(st.Subtasks) != 400 {
		t.Fatalf("the state read back: %d subtasks, %v", len(st.Subtasks), err)
	}
}
