package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// TestWriteQueue: while one store holds the machine's write queue, a
// writer of another store waits for it (its wait ends with its context,
// and the turn it gave up is handed on), and writes once it is given up.
func TestWriteQueue(t *testing.T) {
	t.Parallel()
	s1, root := newStore(t)
	s2, err := Open(t.Context(), root)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if err := s1.wq.lock(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	sc := workspace.Scope{Kind: workspace.ScopeGlobal}
	req := workspace.StoreRequest{Key: "k", Description: "d", Value: json.RawMessage(`1`), Agent: "a"}
	if _, err := s2.StoreEntry(ctx, sc, req); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a write while another store holds the queue: %v, want its context's end", err)
	}
	s1.wq.unlock()
	r, err := s2.StoreEntry(t.Context(), sc, req)
	if err != nil || r.Entry.Version != 1 {
		t.Fatalf("the write once the queue is free: %+v, %v", r, err)
	}
	if _, err := s1.StoreEntry(t.Context(), sc, req); err != nil {
		t.Fatalf("the first store writes again: %v", err)
	}
}

// TestStatementsLearned: a write statement run twice is prepared on the
// write pool, and the writes through it keep their effect.
func TestStatementsLearned(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	sc := workspace.Scope{Kind: workspace.ScopeGlobal}
	for i := range 3 {
		r, err := s.StoreEntry(t.Context(), sc, workspace.StoreRequest{Key: "k", Description: "d", Value: json.RawMessage(`1`), Agent: "a"})
		if err != nil || r.Entry.Version != i+1 {
			t.Fatalf("store %d: %+v, %v", i, r, err)
		}
	}
	s.wc.mu.Lock()
	defer s.wc.mu.Unlock()
	for q := range s.wc.ready {
		if strings.HasPrefix(q, "INSERT INTO entries") {
			return
		}
	}
	t.Fatalf("the entry's upsert is not prepared after three stores; prepared: %d", len(s.wc.ready))
}

// TestWriteSyncedCanceled: the daemon's commit, whose statements run
// under no deadline of their own, is still rolled back when its context
// ends once begun (database/sql's transaction follows the context: the
// next statement finds it done, or COMMIT its context ended), and not
// begun when it ended before.
func TestWriteSyncedCanceled(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx, cancel := context.WithCancel(t.Context())
	err := s.writeSynced(ctx, func(tx wtx) error {
		for i, p := range []string{"a.json", "b.json"} {
			if i == 1 {
				cancel()
			}
			if _, err := tx.ExecContext(ctx, "INSERT INTO files (path, body) VALUES ($1, '{}')", p); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		t.Fatal("a commit whose context ended once begun: committed, want it rolled back")
	}
	var n int
	if err := s.rdb.QueryRowContext(t.Context(), "SELECT count(*) FROM files WHERE path IN ('a.json', 'b.json')").Scan(&n); err != nil || n != 0 {
		t.Fatalf("rows committed: %d, %v; want none", n, err)
	}
	ran := false
	err = s.writeSynced(ctx, func(tx wtx) error { ran = true; return nil })
	if !errors.Is(err, context.Canceled) || ran {
		t.Fatalf("a commit whose context ended before it began: %v (ran %v), want context.Canceled and nothing run", err, ran)
	}
	if err := s.writeSynced(t.Context(), func(tx wtx) error {
		_, err := tx.ExecContext(t.Context(), "INSERT INTO files (path, body) VALUES ('c.json', '{}')")
		return err
	}); err != nil {
		t.Fatalf("a commit after: %v", err)
	}
}
