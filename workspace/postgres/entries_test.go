package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/storetest"
)

// TestEntriesInjection: keys, values and descriptions that are SQL are
// stored and read back as data, and the tables are all still there.
func TestEntriesInjection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	if err := s.PutTask(ctx, workspace.Task{ID: "t1", Description: "x"}); err != nil {
		t.Fatal(err)
	}
	keys := []string{`'); DROP TABLE entries; --`, `"; DELETE FROM states; --`, `x' OR '1'='1`, `$1`, `\\'`, "ключ", "a/b/../c"}
	sc := workspace.Scope{Kind: workspace.ScopeThread, TaskID: "t1"}
	for i, k := range keys {
		v := json.RawMessage(fmt.Sprintf(`{"sql": %q}`, "'); DROP TABLE tasks; --"+k))
		if _, err := s.StoreEntry(ctx, sc, workspace.StoreRequest{Key: k, Description: k, Value: v, Agent: "a1"}); err != nil {
			t.Fatalf("store %q: %v", k, err)
		}
		e, err := s.GetEntry(ctx, sc, k)
		if err != nil || e.Key != k || e.ShortDescription != k || string(e.Value) != string(v) || e.Version != 1 {
			t.Fatalf("key %d read back as %+v, %v", i, e, err)
		}
	}
	items, err := s.ListEntries(ctx, sc)
	if err != nil || len(items) != len(keys) {
		t.Fatalf("list: %d items, %v", len(items), err)
	}
	for i := 1; i < len(items); i++ {
		if items[i-1].Key >= items[i].Key {
			t.Fatalf("list not sorted by key: %q before %q", items[i-1].Key, items[i].Key)
		}
	}
	var tables int
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = $1", s.schema).Scan(&tables); err != nil || tables < 12 {
		t.Fatalf("tables left: %d, %v", tables, err)
	}
	// Another scope sees none of them.
	if items, err := s.ListEntries(ctx, workspace.Scope{Kind: workspace.ScopeGlobal}); err != nil || len(items) != 0 {
		t.Fatalf("global scope: %v, %v", items, err)
	}
}

func TestEntriesErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	if err := s.PutTask(ctx, workspace.Task{ID: "t1", Description: "x"}); err != nil {
		t.Fatal(err)
	}
	sc := workspace.Scope{Kind: workspace.ScopeThread, TaskID: "t1"}
	deep := strings.Repeat("[", 100) + strings.Repeat("]", 100)
	for _, c := range []struct {
		name string
		sc   workspace.Scope
		req  workspace.StoreRequest
		kind error
	}{
		{"oversized", sc, workspace.StoreRequest{Key: "k", Value: json.RawMessage(`"` + strings.Repeat("x", 2<<20) + `"`), Agent: "a"}, workspace.ErrInvalid},
		{"deep", sc, workspace.StoreRequest{Key: "k", Value: json.RawMessage(deep), Agent: "a"}, workspace.ErrInvalid},
		{"not json", sc, workspace.StoreRequest{Key: "k", Value: json.RawMessage(`{"a":`), Agent: "a"}, workspace.ErrInvalid},
		{"two documents", sc, workspace.StoreRequest{Key: "k", Value: json.RawMessage(`1 2`), Agent: "a"}, workspace.ErrInvalid},
		{"empty key", sc, workspace.StoreRequest{Key: "", Value: json.RawMessage(`1`), Agent: "a"}, workspace.ErrInvalid},
		{"control in key", sc, workspace.StoreRequest{Key: "a\x00b", Value: json.RawMessage(`1`), Agent: "a"}, workspace.ErrInvalid},
		{"bad agent", sc, workspace.StoreRequest{Key: "k", Value: json.RawMessage(`1`), Agent: "a b'"}, workspace.ErrInvalid},
		{"bad task id", workspace.Scope{Kind: workspace.ScopeThread, TaskID: "../x"}, workspace.StoreRequest{Key: "k", Value: json.RawMessage(`1`), Agent: "a"}, workspace.ErrInvalid},
		{"missing task", workspace.Scope{Kind: workspace.ScopeThread, TaskID: "nope"}, workspace.StoreRequest{Key: "k", Value: json.RawMessage(`1`), Agent: "a"}, workspace.ErrNotFound},
	} {
		_, err := s.StoreEntry(ctx, c.sc, c.req)
		if !errors.Is(err, c.kind) {
			t.Errorf("%s: %v, want %v", c.name, err, c.kind)
		}
	}
	var n int
	_ = s.pool.QueryRow(ctx, "SELECT count(*) FROM entries").Scan(&n)
	if n != 0 {
		t.Fatalf("%d entries written by refused stores", n)
	}
	if _, err := s.GetEntry(ctx, sc, "k"); !errors.Is(err, workspace.ErrNotFound) {
		t.Fatalf("get missing: %v", err)
	}
	if _, err := s.UpdateEntry(ctx, sc, workspace.UpdateRequest{Key: "k", Value: json.RawMessage(`1`), Agent: "a"}); !errors.Is(err, workspace.ErrNotFound) {
		t.Fatalf("update missing: %v", err)
	}
	if err := s.DeleteEntry(ctx, sc, workspace.DeleteRequest{Key: "k", Agent: "a"}); !errors.Is(err, workspace.ErrNotFound) {
		t.Fatalf("delete missing: %v", err)
	}
	if _, err := s.StoreEntry(ctx, sc, workspace.StoreRequest{Key: "k", Value: json.RawMessage(`1`), Agent: "a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateEntry(ctx, sc, workspace.UpdateRequest{Key: "k", Value: json.RawMessage(`2`), Agent: "a", IfVersion: 7}); !errors.Is(err, workspace.ErrConflict) {
		t.Fatalf("stale if_version: %v", err)
	}
	r, err := s.UpdateEntry(ctx, sc, workspace.UpdateRequest{Key: "k", Value: json.RawMessage(`2`), Agent: "a", IfVersion: 1})
	if err != nil || r.Entry.Version != 2 || string(r.Entry.Value) != "2" {
		t.Fatalf("update: %+v, %v", r, err)
	}
	var events int
	_ = s.pool.QueryRow(ctx, "SELECT count(*) FROM events WHERE task_id = 't1' AND (line LIKE '% env_stored %' OR line LIKE '% env_updated %')").Scan(&events)
	if events != 2 {
		t.Fatalf("%d entry events, want 2", events)
	}
}

// TestEntriesNoLostUpdate: 8 writers × 50 compare-and-swap increments of
// one counter; every increment lands.
func TestEntriesNoLostUpdate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	sc := workspace.Scope{Kind: workspace.ScopeGlobal}
	if _, err := s.StoreEntry(ctx, sc, workspace.StoreRequest{Key: "n", Value: json.RawMessage(`0`), Agent: "a"}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				for {
					e, err := s.GetEntry(ctx, sc, "n")
					if err != nil {
						t.Error(err)
						return
					}
					var n int
					_ = json.Unmarshal(e.Value, &n)
					_, err = s.UpdateEntry(ctx, sc, workspace.UpdateRequest{Key: "n", Value: json.RawMessage(fmt.Sprint(n + 1)), Agent: fmt.Sprintf("w%d", w), IfVersion: e.Version})
					if err == nil {
						break
					}
					if !errors.Is(err, workspace.ErrConflict) {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	e, err := s.GetEntry(ctx, sc, "n")
	if err != nil || string(e.Value) != "400" || e.Version != 401 {
		t.Fatalf("counter %s version %d, %v; want 400 and 401", e.Value, e.Version, err)
	}
}

// TestSQLEntryWritesMakeEvents: entries an agent writes with its own SQL
// (psql, psycopg) make their events, once each, in order; a DELETE that
// names no agent is the database role's.
func TestSQLEntryWritesMakeEvents(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	var role string
	if err := s.pool.QueryRow(context.Background(), "SELECT current_user").Scan(&role); err != nil {
		t.Fatal(err)
	}
	storetest.SQLEntryWrites(t, s, func(ctx context.Context, q string) error {
		_, err := s.pool.Exec(ctx, q)
		return err
	}, role)
}
