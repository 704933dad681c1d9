package sqlstore

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// TestEventAround: the line a statement makes of the head, the version it
// writes and the tail is the event's line at that version, whatever the
// namespace, key and agent hold and with or without a token.
func TestEventAround(t *testing.T) {
	at := time.Date(2026, 11, 29, 14, 0, 0, 123e6, time.UTC)
	for _, tc := range []struct {
		ns         workspace.Namespace
		key, agent string
		token      string
		extra      map[string]string
	}{
		{workspace.Namespace{"users", "42"}, "prefs", "po", "", nil},
		{workspace.Namespace{"a b", "version=1"}, "version=1", "po", "tok1", nil},
		{workspace.Namespace{"ünï", "\"q\""}, "k version=2", "a", "t", nil},
		{workspace.Namespace{"x"}, "k", "a", "", map[string]string{"zeta": "version=3"}},
	} {
		ctx := context.Background()
		if tc.token != "" {
			ctx = workspace.WithToken(ctx, tc.token)
		}
		e := workspace.Attributed(ctx, workspace.MemoryEvent("stored", tc.ns, tc.key, tc.agent, 1, at))
		for k, v := range tc.extra {
			e.Attrs[k] = v
		}
		p := MemoryPut{event: e}
		head, tail := p.EventAround()
		for _, v := range []int{1, 9, 10, 12345} {
			if got, want := head+strconv.Itoa(v)+tail, p.EventLine(v); got != want {
				t.Errorf("%v %q at version %d: %q, want %q", tc.ns, tc.key, v, got, want)
			}
		}
	}
}
