package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace"
)

// TestGrantGuard: the memory item's get, put and batch run with a grant
// guard that a look-up remembered; once another Keeper on the same
// schema (another process: its own pool) changed or removed the token's
// row, each is refused with ErrGrantChanged, writing nothing and handing
// back no value, a get of an item that is not there included; without a
// guard they run as before.
func TestGrantGuard(t *testing.T) {
	t.Parallel()
	s, root := newStore(t)
	ctx := context.Background()
	other, err := Open(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Close() })
	k := s.Tokens()
	m, ok := k.(tokens.Rememberer)
	if !ok {
		t.Fatal("the store's Keeper remembers no grant")
	}
	for _, op := range []string{workspace.GuardedMemoryGet, workspace.GuardedMemoryPut, workspace.GuardedMemoryBatch} {
		if !s.GuardsGrant(op) {
			t.Fatalf("GuardsGrant(%q) = false", op)
		}
	}
	if s.GuardsGrant("memory delete") {
		t.Fatal("GuardsGrant of an operation that checks no guard")
	}
	count := func() (items, events int) {
		t.Helper()
		if err := s.pool.QueryRow(ctx, "SELECT (SELECT count(*) FROM memory_items), (SELECT count(*) FROM memory_events)").Scan(&items, &events); err != nil {
			t.Fatal(err)
		}
		return items, events
	}
	for _, change := range []struct {
		name string
		do   func(g tokens.Grant) error
	}{
		{"revoked", func(g tokens.Grant) error { _, err := tokens.Revoke(ctx, other.Tokens(), g.ID(), ""); return err }},
		{"rights changed", func(g tokens.Grant) error {
			return other.Tokens().Update(ctx, "test", func(d *tokens.FileDoc) error {
				for i := range d.Tokens {
					if d.Tokens[i].SHA256 == g.SHA256 {
						d.Tokens[i].GlobalMemory = tokens.GlobalRead
					}
				}
				return nil
			})
		}},
	} {
		t.Run(change.name, func(t *testing.T) {
			ns := workspace.Namespace{"guarded", change.name}
			put := func(key string, ifVersion int) workspace.MemoryPutRequest {
				return workspace.MemoryPutRequest{Namespace: ns, Key: key, Value: json.RawMessage(`{"v":1}`), Agent: "a", IfVersion: ifVersion}
			}
			tok, g, err := tokens.Add(ctx, k, tokens.Grant{Agent: "a", Tasks: []string{tokens.AllTasks}, GlobalMemory: tokens.GlobalWrite})
			if err != nil {
				t.Fatal(err)
			}
			if _, _, ok := m.Remembered(tok); ok {
				t.Fatal("a grant remembered before any look-up")
			}
			if _, err := k.Lookup(tok); err != nil {
				t.Fatal(err)
			}
			rg, guard, ok := m.Remembered(tok)
			if !ok || rg.Agent != "a" || guard.SHA256 != tokens.Hash(tok) || guard.Doc == "" {
				t.Fatalf("Remembered after a look-up: %+v, %+v, %v", rg, guard, ok)
			}
			gctx := workspace.WithGrantGuard(ctx, guard)
			it, err := s.PutMemory(gctx, put("k", 0))
			if err != nil {
				t.Fatalf("a guarded put: %v", err)
			}
			if _, err := s.PutMemory(gctx, put("k", it.Version)); err != nil {
				t.Fatalf("a guarded put with a version: %v", err)
			}
			if got, err := s.GetMemory(gctx, ns, "k"); err != nil || got.Version != 2 {
				t.Fatalf("a guarded get: %+v, %v", got, err)
			}
			batch := []workspace.MemoryPutRequest{put("b1", 0), put("b2", 0)}
			if _, err := s.PutMemoryItems(gctx, batch); err != nil {
				t.Fatalf("a guarded batch: %v", err)
			}
			if err := change.do(g); err != nil {
				t.Fatal(err)
			}
			items, events := count()
			refused := []struct {
				name string
				run  func() error
			}{
				{"get", func() error {
					got, err := s.GetMemory(gctx, ns, "k")
					if got.Value != nil {
						t.Errorf("a refused get handed back %s", got.Value)
					}
					return err
				}},
				{"get of no item", func() error { _, err := s.GetMemory(gctx, ns, "none"); return err }},
				{"put", func() error { _, err := s.PutMemory(gctx, put("k", 0)); return err }},
				{"put of a new item", func() error { _, err := s.PutMemory(gctx, put("new", 0)); return err }},
				{"put with a version", func() error { _, err := s.PutMemory(gctx, put("k", 2)); return err }},
				{"batch of plain puts", func() error {
					_, err := s.PutMemoryItems(gctx, []workspace.MemoryPutRequest{put("k", 0), put("new", 0)})
					return err
				}},
				{"batch with a version", func() error {
					_, err := s.PutMemoryItems(gctx, []workspace.MemoryPutRequest{put("new", 0), put("k", 2), put("k", 0)})
					return err
				}},
			}
			for _, r := range refused {
				if err := r.run(); !errors.Is(err, workspace.ErrGrantChanged) {
					t.Errorf("%s after the grant changed: %v, want ErrGrantChanged", r.name, err)
				}
			}
			if i, e := count(); i != items || e != events {
				t.Errorf("refused writes wrote: %d items and %d events, were %d and %d", i, e, items, events)
			}
			// Without a guard, as before.
			if _, err := s.PutMemory(ctx, put("k", 0)); err != nil {
				t.Fatalf("an unguarded put: %v", err)
			}
			if _, err := s.GetMemory(ctx, ns, "k"); err != nil {
				t.Fatalf("an unguarded get: %v", err)
			}
			// A look-up reads the row again: the guard holds again after
			// a change, and nothing is remembered of a revoked token.
			_, lerr := k.Lookup(tok)
			_, guard2, ok := m.Remembered(tok)
			switch {
			case change.name == "revoked" && (lerr == nil || ok):
				t.Fatalf("a revoked token: look-up %v, remembered %v", lerr, ok)
			case change.name != "revoked":
				if !ok || guard2.Doc == guard.Doc {
					t.Fatalf("after the change a look-up remembered %v, a new row %v", ok, guard2.Doc != guard.Doc)
				}
				if _, err := s.PutMemory(workspace.WithGrantGuard(ctx, guard2), put("k", 0)); err != nil {
					t.Fatalf("a put guarded by the row read again: %v", err)
				}
				m.Forget(tok)
				if _, _, ok := m.Remembered(tok); ok {
					t.Fatal("a grant remembered after Forget")
				}
			}
		})
	}
}
