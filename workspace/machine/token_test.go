package machine

import (
	"testing"

	"github.com/workspaced/workspaced/workspace"
)

// TestEventsNameTheMarkersToken: every event a marker causes names the
// token it was dropped with, when that is a token's id; a marker without
// one, or with anything else in the field, names none.
func TestEventsNameTheMarkersToken(t *testing.T) {
	task := workspace.Task{ID: "t1", CreatedAt: t0}
	for _, c := range []struct {
		name, token, want string
	}{
		{"a token's id", "tk_0123456789ab", "tk_0123456789ab"},
		{"none", "", ""},
		{"not an id", "tk_ZZ", ""},
		{"a secret-looking value", "s3cr3t value", ""},
		{"too long", "tk_" + string(make([]byte, 65)), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			// A claim before any plan is refused: one claim_refused event.
			j := (&journal{}).add(workspace.JournalRecord{Kind: workspace.KindClaim, Marker: workspace.Marker{AgentID: "w1", SubtaskID: "s1", Token: c.token}})
			_, events, err := Replay(task, nil, j.recs)
			if err != nil {
				t.Fatal(err)
			}
			if len(events) == 0 {
				t.Fatal("no event")
			}
			for _, e := range events {
				if got := e.Attrs[workspace.EventToken]; got != c.want {
					t.Errorf("%s names token %q, want %q", e.Name, got, c.want)
				}
			}
		})
	}
}
