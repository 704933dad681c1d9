package sqlite

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/workspace"
)

// TestWALShrinksAfterALongRead: a read that lasts holds the checkpoint
// back and the write-ahead log grows past walSizeLimit meanwhile; once
// it ends, the log is checkpointed, started again and cut back to the
// limit at the next commits, instead of keeping its largest size.
func TestWALShrinksAfterALongRead(t *testing.T) {
	t.Parallel()
	s, root := newStore(t)
	ctx := t.Context()
	if _, err := s.CreateTask(ctx, workspace.NewTaskRequest{ID: "t1", Description: "wal", SubmittedBy: "test"}); err != nil {
		t.Fatal(err)
	}
	reader, err := Open(ctx, root) // another process reading
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	tx, err := reader.rdb.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM entries").Scan(&n); err != nil { // the snapshot is taken
		t.Fatal(err)
	}
	sc := workspace.Scope{Kind: workspace.ScopeThread, TaskID: "t1"}
	wal := s.Path() + "-wal"
	// Past the limit is enough: a log that was not cut back would stay
	// over it after the read.
	for i := 0; walSize(t, wal) <= walSizeLimit; i++ {
		// A value unlike the one it replaces: SQLite writes only the
		// pages of a row that change.
		big := json.RawMessage(strconv.Quote(strings.Repeat(string(rune('a'+i%26)), 900<<10)))
		if _, err := s.StoreEntry(ctx, sc, workspace.StoreRequest{Key: "k" + strconv.Itoa(i%8), Description: "big", Value: big, Agent: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	grown := walSize(t, wal)
	tx.Rollback()
	for i := 0; walSize(t, wal) > walSizeLimit; i++ {
		if i == 10 {
			t.Fatalf("the WAL is still %d bytes after 10 commits past the long read (%d while it lasted), over the %d-byte limit", walSize(t, wal), grown, walSizeLimit)
		}
		if _, err := s.StoreEntry(ctx, sc, workspace.StoreRequest{Key: "small", Description: "small", Value: json.RawMessage(`1`), Agent: "test"}); err != nil {
			t.Fatal(err)
		}
	}
}

func walSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
