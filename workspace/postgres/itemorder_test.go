package postgres

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/workspaced/workspaced/internal/poll"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// TestWritesOfOneItemReadInTheirOrder: a transaction that got its id
// first (it wrote before) but writes an item after another transaction
// wrote it and committed places its event after that one's, so a reader
// reads the item's versions in the order they were written — for an
// entry updated by an agent's own SQL and for a memory item put with the
// store's statement. Before the rows carried their event's xid, the
// first transaction's id put its version before the other's.
func TestWritesOfOneItemReadInTheirOrder(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	if err := s.PutTask(ctx, workspace.Task{ID: "t1", Description: "order"}); err != nil {
		t.Fatal(err)
	}
	// interleave runs write in a transaction that got its id before
	// another transaction ran write and committed.
	interleave := func(t *testing.T, write func(tx pgx.Tx) error) {
		t.Helper()
		early, err := s.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer early.Rollback(ctx)
		if _, err := early.Exec(ctx, "SELECT pg_current_xact_id()"); err != nil {
			t.Fatal(err)
		}
		if err := pgx.BeginFunc(ctx, s.pool, func(late pgx.Tx) error {
			if _, err := late.Exec(ctx, "SELECT pg_current_xact_id()"); err != nil {
				return err
			}
			return write(late)
		}); err != nil {
			t.Fatal(err)
		}
		if err := write(early); err != nil {
			t.Fatal(err)
		}
		if err := early.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	versions := func(t *testing.T, n int, read func(func(workspace.Event)) error, name string) []string {
		var got []string
		poll.Until(t, time.Minute, fmt.Sprintf("%d %s events read", n, name), func() (bool, string) {
			got = got[:0]
			if err := read(func(e workspace.Event) {
				if e.Name == name && e.Attrs["key"] == "k" {
					got = append(got, e.Attrs["version"])
				}
			}); err != nil {
				t.Fatal(err)
			}
			return len(got) >= n, fmt.Sprint(got)
		})
		return got
	}

	t.Run("an entry by an agent's SQL", func(t *testing.T) {
		if _, err := s.pool.Exec(ctx, `INSERT INTO entries (scope, owner, key, short_description, stored_by, created_at, updated_at, version, size, value)
			VALUES ('thread', 't1', 'k', 'order', 'po', now(), now(), 1, 2, '{}')`); err != nil {
			t.Fatal(err)
		}
		update := func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `SELECT set_config('workspaced.entry_verb', 'stored', true);
				UPDATE entries SET version = version + 1, updated_at = clock_timestamp() WHERE scope = 'thread' AND owner = 't1' AND key = 'k'`)
			return err
		}
		if err := pgx.BeginFunc(ctx, s.pool, update); err != nil {
			t.Fatal(err)
		}
		interleave(t, update)
		want := []string{"1", "2", "3", "4"}
		got := versions(t, len(want), func(f func(workspace.Event)) error {
			_, err := s.ReadEventsFrom(ctx, "t1", 0, func(e workspace.PositionedEvent) { f(e.Event) })
			return err
		}, "env_stored")
		if !slices.Equal(got, want) {
			t.Errorf("the entry's versions read in the order %v, want %v", got, want)
		}
	})
	t.Run("a memory item by the store's put", func(t *testing.T) {
		ns := workspace.Namespace{"itemorder"}
		put := func(tx pgx.Tx) error {
			p, err := sqlstore.NewMemoryPut(ctx, workspace.MemoryPutRequest{Namespace: ns, Key: "k", Value: []byte(`{}`), Agent: "po"}, sqlstore.Now())
			if err != nil {
				return err
			}
			q, args := memoryStatement(p)
			_, err = tx.Exec(ctx, q, args...)
			return err
		}
		if err := pgx.BeginFunc(ctx, s.pool, put); err != nil {
			t.Fatal(err)
		}
		interleave(t, put)
		want := []string{"1", "2", "3"}
		got := versions(t, len(want), func(f func(workspace.Event)) error {
			_, err := s.ReadMemoryEvents(ctx, 0, func(e workspace.PositionedEvent) { f(e.Event) })
			return err
		}, "memory_stored")
		if !slices.Equal(got, want) {
			t.Errorf("the item's versions read in the order %v, want %v", got, want)
		}
	})
}
