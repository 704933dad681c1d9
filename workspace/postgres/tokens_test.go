package postgres

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/tokens/tokenstest"
	"github.com/workspaced/workspaced/workspace"
)

// The tokens table is a tokens.Keeper as the agents file is: a token is
// found by its hash, a revoke is seen at the next look-up, concurrent adds
// lose nothing, and a grant that would not pass in a file is refused.
func TestTokensKeeper(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	k := s.Tokens()
	tok, g, err := tokens.Add(ctx, k, tokens.Grant{Agent: "worker", Tasks: []string{"t1"}, May: []string{tokens.RightClaim}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := k.Lookup(tok)
	if err != nil || got.Agent != "worker" || got.SHA256 != tokens.Hash(tok) || !got.Can(tokens.RightClaim) {
		t.Fatalf("Lookup = %+v, %v", got, err)
	}
	if _, err := k.Lookup(tok + "x"); !errors.Is(err, tokens.ErrUnknown) {
		t.Fatalf("Lookup of another token: %v, want ErrUnknown", err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, _, err := tokens.Add(ctx, k, tokens.Grant{Agent: "many", Tasks: []string{tokens.AllTasks}}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	list, err := k.List(ctx)
	if err != nil || len(list) != 9 || list[0].ID() != g.ID() {
		t.Fatalf("List: %d grants, first %v, %v; want 9, worker's first", len(list), list, err)
	}
	if gone, err := tokens.Revoke(ctx, k, g.ID(), ""); err != nil || len(gone) != 1 {
		t.Fatalf("Revoke: %v %v", gone, err)
	}
	if _, err := k.Lookup(tok); !errors.Is(err, tokens.ErrUnknown) {
		t.Fatalf("Lookup after the revoke: %v, want ErrUnknown", err)
	}
	if _, err := tokens.Revoke(ctx, k, "tk_000000000000", ""); !errors.Is(err, workspace.ErrNotFound) {
		t.Fatalf("Revoke of no token: %v", err)
	}
	if _, _, err := tokens.Add(ctx, k, tokens.Grant{Agent: "'); DROP TABLE tokens; --", Tasks: []string{"t1"}}); !errors.Is(err, workspace.ErrInvalid) {
		t.Fatalf("Add of a bad agent: %v, want ErrInvalid", err)
	}
	// A change that would break the list (a hash twice) writes nothing.
	err = k.Update(ctx, "test", func(d *tokens.FileDoc) error {
		d.Tokens = append(d.Tokens, d.Tokens[0])
		return nil
	})
	if !errors.Is(err, workspace.ErrInvalid) {
		t.Fatalf("Update with a hash twice: %v, want ErrInvalid", err)
	}
	if list, _ := k.List(ctx); len(list) != 8 {
		t.Fatalf("%d grants after a refused update, want 8", len(list))
	}
}

// TestTokensLifecycle: expiry, rotation, last use and the watch, as on
// the agents file.
func TestTokensLifecycle(t *testing.T) {
	s, _ := newStore(t)
	tokenstest.Lifecycle(t, s.Tokens())
}
