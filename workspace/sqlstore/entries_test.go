package sqlstore

import (
	"errors"
	"testing"
	"time"

	"github.com/workspaced/workspaced/workspace"

	_ "github.com/workspaced/workspaced/internal/raceexit"
)

func TestCheckUpdate(t *testing.T) {
	lim := workspace.LimitSettings{ValueMaxBytes: workspace.DefaultValueMaxBytes, ValueWarnBytes: workspace.DefaultValueWarnBytes, MaxDepth: workspace.DefaultMaxDepth}
	sc := workspace.Scope{Kind: workspace.ScopeAgent, Agent: "a1"}
	tests := []struct {
		name string
		req  workspace.UpdateRequest
		kind error
	}{
		{"nothing", workspace.UpdateRequest{Key: "k", Agent: "a1"}, workspace.ErrInvalid},
		{"bad key", workspace.UpdateRequest{Key: "", Agent: "a1", Value: []byte("1")}, workspace.ErrInvalid},
		{"value", workspace.UpdateRequest{Key: "k", Agent: "a1", Value: []byte("1")}, nil},
	}
	for _, tc := range tests {
		own, _, _, err := CheckUpdate(sc, tc.req, lim)
		if !errors.Is(err, tc.kind) || (tc.kind == nil && err != nil) {
			t.Errorf("%s: err %v, want %v", tc.name, err, tc.kind)
		}
		if err == nil && own != "a1" {
			t.Errorf("%s: owner %q", tc.name, own)
		}
	}
}

// A store may append the version to a line built without it (the
// version attribute sorts last), as PostgreSQL's one-statement store does.
func TestEntryEventLineVersionLast(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, sc := range []workspace.Scope{
		{Kind: workspace.ScopeThread, TaskID: "t1"},
		{Kind: workspace.ScopeSession, TaskID: "t1", ThreadID: "th"},
	} {
		with := EntryEventLine(sc, "stored", "k", "zed", "tk_0123456789ab", 3, at)
		without := EntryEventLine(sc, "stored", "k", "zed", "tk_0123456789ab", 0, at)
		if with != without+" version=3" {
			t.Errorf("%s: %q is not %q + version", sc.Kind, with, without)
		}
	}
	if got := EntryEventLine(workspace.Scope{Kind: workspace.ScopeGlobal}, "stored", "k", "a", "", 1, at); got != "" {
		t.Errorf("global scope has an event line %q", got)
	}
}

func TestApplyUpdateConflict(t *testing.T) {
	e := workspace.Entry{Key: "k", Version: 2, Value: []byte("1")}
	err := ApplyUpdate(&e, workspace.UpdateRequest{Key: "k", Agent: "a", IfVersion: 1, Value: []byte("2")}, "update", time.Now())
	if !errors.Is(err, workspace.ErrConflict) {
		t.Fatalf("err %v, want ErrConflict", err)
	}
	if err := ApplyUpdate(&e, workspace.UpdateRequest{Key: "k", Agent: "a", IfVersion: 2, Value: []byte("2")}, "update", time.Now()); err != nil {
		t.Fatal(err)
	}
	if e.Version != 3 || string(e.Value) != "2" || e.StoredBy != "a" {
		t.Errorf("entry after update: %+v", e)
	}
}
