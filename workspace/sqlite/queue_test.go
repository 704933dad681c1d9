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
