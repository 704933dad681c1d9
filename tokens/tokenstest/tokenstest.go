// Package tokenstest runs the same checks of a token's life on every
// tokens.Keeper: the agents file of a tree, the tokens table of SQLite
// and of PostgreSQL.
package tokenstest

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/poll"
	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace"
)

// Lifecycle checks, on an empty k, that a token added with an expiry is
// accepted until it and refused after it (ErrExpired), that a rotation
// gives a new token the same grant while the old one works for its
// overlap and not after, that a rotation with no overlap ends the old
// token at once and a second rotation of it is refused, that the last
// use is written, and that a Watch ends what it holds for a token
// revoked, expired or rotated, and nothing else.
func Lifecycle(t *testing.T, k tokens.Keeper) {
	t.Helper()
	ctx := context.Background()
	now := k.Now()
	if _, _, err := tokens.Add(ctx, k, tokens.Grant{Agent: "late", Tasks: []string{"t1"}, ExpiresAt: now.Add(-time.Second)}); !errors.Is(err, workspace.ErrInvalid) {
		t.Fatalf("adding a token that expired already: %v, want ErrInvalid", err)
	}
	tok, g, err := tokens.Add(ctx, k, tokens.Grant{Agent: "worker", Tasks: []string{"t1"}, May: []string{tokens.RightClaim}, Note: "n", ExpiresAt: now.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := k.Lookup(tok); err != nil || got.ExpiresAt.IsZero() {
		t.Fatalf("a token before its expiry: %+v, %v", got, err)
	}
	// Its expiry moved into the past, as time would.
	setExpiry(t, k, g.ID(), k.Now().Add(-time.Second))
	if _, err := k.Lookup(tok); !errors.Is(err, tokens.ErrExpired) || !strings.Contains(err.Error(), "expired at") {
		t.Fatalf("a token past its expiry: %v, want ErrExpired saying when", err)
	}

	old, og, err := tokens.Add(ctx, k, tokens.Grant{Agent: "planner", Tasks: []string{tokens.AllTasks}, May: []string{tokens.RightPlan}, GlobalMemory: tokens.GlobalRead})
	if err != nil {
		t.Fatal(err)
	}
	w := tokens.NewWatch(k, 10*time.Millisecond, nil)
	defer w.Close()
	var oldEnded, otherEnded atomic.Bool
	w.Hold(og.ID(), func() { oldEnded.Store(true) })
	_, og2, err := tokens.Add(ctx, k, tokens.Grant{Agent: "other", Tasks: []string{"t2"}})
	if err != nil {
		t.Fatal(err)
	}
	release := w.Hold(og2.ID(), func() { otherEnded.Store(true) })
	defer release()

	fresh, ng, oldAfter, err := tokens.Rotate(ctx, k, tokens.Rotation{ID: og.ID(), Overlap: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if fresh == old || ng.Agent != "planner" || !ng.Can(tokens.RightPlan) || !ng.ReadGlobal() || !ng.Task("any") || oldAfter.RotatedTo != ng.ID() {
		t.Fatalf("rotation: new %+v, old %+v", ng, oldAfter)
	}
	for _, tk := range []string{old, fresh} {
		if got, err := k.Lookup(tk); err != nil || got.Agent != "planner" {
			t.Fatalf("during the overlap: %+v, %v", got, err)
		}
	}
	if _, _, _, err := tokens.Rotate(ctx, k, tokens.Rotation{ID: og.ID()}); !errors.Is(err, workspace.ErrInvalid) || !strings.Contains(err.Error(), ng.ID()) {
		t.Fatalf("rotating a token replaced already: %v, want ErrInvalid naming its successor", err)
	}
	if oldEnded.Load() {
		t.Fatal("the watch ended the old token's hold during the overlap")
	}
	setExpiry(t, k, og.ID(), k.Now().Add(-time.Second))
	if _, err := k.Lookup(old); !errors.Is(err, tokens.ErrExpired) || !strings.Contains(err.Error(), ng.ID()) {
		t.Fatalf("after the overlap: %v, want ErrExpired naming the successor", err)
	}
	poll.Until(t, 10*time.Second, "the watch to end the rotated token's hold", func() (bool, string) { return oldEnded.Load(), "" })

	// No overlap: the old token ends at once.
	fresher, ng2, _, err := tokens.Rotate(ctx, k, tokens.Rotation{ID: ng.ID(), TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Lookup(fresh); !errors.Is(err, tokens.ErrExpired) {
		t.Fatalf("rotated with no overlap: %v, want ErrExpired", err)
	}
	if got, err := k.Lookup(fresher); err != nil || got.ExpiresAt.Sub(got.CreatedAt) != time.Hour || got.ID() != ng2.ID() {
		t.Fatalf("the newest token: %+v, %v", got, err)
	}

	// The last use is written.
	got, err := k.Lookup(fresher)
	if err != nil {
		t.Fatal(err)
	}
	at := k.Now()
	w.Used(got, at)
	poll.Until(t, 10*time.Second, "the last use to be written", func() (bool, string) {
		g, err := k.Lookup(fresher)
		return err == nil && !g.LastUsedAt.IsZero(), "not yet"
	})

	// A revoke ends the hold of the other token.
	if otherEnded.Load() {
		t.Fatal("the other token's hold ended before it was revoked")
	}
	if _, err := tokens.Revoke(ctx, k, og2.ID(), ""); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "the watch to end the revoked token's hold", func() (bool, string) { return otherEnded.Load(), "" })

	gone, err := tokens.RemoveEnded(ctx, k)
	if err != nil || len(gone) != 3 {
		t.Fatalf("RemoveEnded = %d grants, %v; want the expired, the rotated and the rotated again", len(gone), err)
	}
	list, err := k.List(ctx)
	if err != nil || len(list) != 1 || list[0].ID() != ng2.ID() {
		t.Fatalf("left after removing the ended: %+v, %v", list, err)
	}
}

// setExpiry sets the expiry of the token id as time passing would.
func setExpiry(t *testing.T, k tokens.Keeper, id string, at time.Time) {
	t.Helper()
	err := k.Update(context.Background(), "test", func(d *tokens.FileDoc) error {
		for i := range d.Tokens {
			if d.Tokens[i].ID() == id {
				d.Tokens[i].ExpiresAt = at
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
