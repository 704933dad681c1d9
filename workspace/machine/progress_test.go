package machine

import (
	"slices"
	"testing"
	"time"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/statecheck"
)

func TestProgressNotesWhatChanged(t *testing.T) {
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	running := func() *workspace.SubtaskState {
		return &workspace.SubtaskState{Status: SubtaskInProgress, StartedAt: &at}
	}
	st := workspace.State{Subtasks: map[string]*workspace.SubtaskState{
		"a": running(), "b": {Status: SubtaskPending}, "c": running(),
	}}
	ids := func(p *Progress) []string {
		var out []string
		for _, it := range p.AppendTo(nil, map[string]string{"a": "high"}) {
			out = append(out, it.SubtaskID+":"+it.Complexity)
		}
		slices.Sort(out)
		return out
	}
	var p Progress
	p.Note("t", st, &statecheck.Changed{}) // knows nothing yet: looks at all
	if got := ids(&p); !slices.Equal(got, []string{"a:high", "c:"}) {
		t.Fatalf("first note: %v", got)
	}
	// b starts and c completes, but only b is said to have changed: c is
	// kept as it was, as a commit that did not touch it would.
	st.Subtasks["b"], st.Subtasks["c"] = running(), &workspace.SubtaskState{Status: SubtaskCompleted}
	p.Note("t", st, &statecheck.Changed{Subtasks: map[string]struct{}{"b": {}}})
	if got := ids(&p); !slices.Equal(got, []string{"a:high", "b:", "c:"}) {
		t.Fatalf("after b changed: %v", got)
	}
	p.Note("t", st, &statecheck.Changed{All: true})
	if got := ids(&p); !slices.Equal(got, []string{"a:high", "b:"}) || p.Len() != 2 {
		t.Fatalf("after all changed: %v (%d)", got, p.Len())
	}
	if Complexity(nil) != nil {
		t.Error("the complexity of no plan is not nil")
	}
}
