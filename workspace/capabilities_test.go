package workspace_test

import (
	"context"
	"testing"

	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"
	"github.com/workspaced/workspaced/workspace/postgres"
	"github.com/workspaced/workspaced/workspace/sqlite"
)

// Each store has the capabilities capabilities.go says it has: a method
// whose signature drifted would make As answer false at run time, so the
// compiler checks them here.
var (
	_ workspace.Served          = (*files.Store)(nil)
	_ workspace.Served          = (*sqlite.Store)(nil)
	_ workspace.Served          = (*postgres.Store)(nil)
	_ workspace.LiveServer      = (*files.Store)(nil)
	_ workspace.LiveServer      = (*sqlite.Store)(nil)
	_ workspace.Watcher         = (*files.Store)(nil)
	_ workspace.Watcher         = (*sqlite.Store)(nil)
	_ workspace.Watcher         = (*postgres.Store)(nil)
	_ workspace.VerdictSource   = (*files.Store)(nil)
	_ workspace.VerdictSource   = (*sqlite.Store)(nil)
	_ workspace.VerdictSource   = (*postgres.Store)(nil)
	_ workspace.CommitSource    = (*files.Store)(nil)
	_ workspace.CommitSource    = (*sqlite.Store)(nil)
	_ workspace.CommitSource    = (*postgres.Store)(nil)
	_ workspace.StatusReader    = (*sqlite.Store)(nil)
	_ workspace.StatusReader    = (*postgres.Store)(nil)
	_ workspace.Rebuilder       = (*sqlite.Store)(nil)
	_ workspace.Rebuilder       = (*postgres.Store)(nil)
	_ workspace.ThreadsReporter = (*files.Store)(nil)
	_ workspace.ServingReporter = (*files.Store)(nil)
	_ workspace.ServingReporter = (*sqlite.Store)(nil)
	_ workspace.ServingReporter = (*postgres.Store)(nil)
	_ workspace.DaemonLocker    = (*sqlite.Store)(nil)
	_ workspace.Pinger          = (*postgres.Store)(nil)
	_ workspace.MarkerCounter   = (*postgres.Store)(nil)
	_ workspace.NamedMarkers    = (*files.Store)(nil)
	_ workspace.NamedMarkers    = (*sqlite.Store)(nil)
	_ workspace.NamedMarkers    = (*postgres.Store)(nil)
	_ tokens.Holder             = (*sqlite.Store)(nil)
	_ tokens.Holder             = (*postgres.Store)(nil)
)

// wrapped is a store wrapper that offers nothing beyond the Store it
// wraps, and says what it wraps.
type wrapped struct{ workspace.Store }

func (w wrapped) Unwrap() workspace.Store { return w.Store }

// opaque wraps a store and hides it: no Unwrap.
type opaque struct{ workspace.Store }

// pinging wraps a store and answers Ping itself.
type pinging struct {
	wrapped
	pinged *bool
}

func (p pinging) Ping(context.Context) error { *p.pinged = true; return nil }

func TestAs(t *testing.T) {
	st, err := files.Init(t.TempDir(), workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	if w, ok := workspace.As[workspace.Watcher](st); !ok || w != workspace.Watcher(st) {
		t.Errorf("As[Watcher](tree) = %v, %v; want the tree itself", w, ok)
	}
	// Through two wrappers, to the tree.
	if w, ok := workspace.As[workspace.Watcher](wrapped{wrapped{st}}); !ok || w != workspace.Watcher(st) {
		t.Errorf("As[Watcher] through two wrappers = %v, %v; want the tree", w, ok)
	}
	// A capability no store down the chain has.
	if _, ok := workspace.As[workspace.StatusReader](wrapped{st}); ok {
		t.Error("As[StatusReader] found one on the tree, which keeps no status of its own")
	}
	// A wrapper without Unwrap hides what it wraps.
	if _, ok := workspace.As[workspace.Watcher](opaque{st}); ok {
		t.Error("As[Watcher] looked through a wrapper that does not unwrap")
	}
	// The outermost value that has the capability answers.
	pinged := false
	p, ok := workspace.As[workspace.Pinger](pinging{wrapped{st}, &pinged})
	if !ok {
		t.Fatal("As[Pinger] missed the wrapper's own Ping")
	}
	if err := p.Ping(t.Context()); err != nil || !pinged {
		t.Errorf("Ping through As: %v, pinged %v; want the wrapper's", err, pinged)
	}
	// Nothing, and a wrapper of nothing, has no capability.
	if _, ok := workspace.As[workspace.Watcher](nil); ok {
		t.Error("As[Watcher](nil) = true")
	}
	if _, ok := workspace.As[workspace.Watcher](wrapped{}); ok {
		t.Error("As[Watcher] of a wrapper of nothing = true")
	}
}
