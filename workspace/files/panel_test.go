package files

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/workspaced/workspaced/workspace"
)

// TestReadEventsFrom: positions are byte offsets of whole lines; reading
// from any End resumes at the next event, a partial line waits, a bad
// line is passed over but counted.
func TestReadEventsFrom(t *testing.T) {
	t.Parallel()
	w, _ := newWS(t)
	newTask(t, w, "t1")
	for _, n := range []string{"a", "b"} {
		if err := w.AppendEvent(t.Context(), workspace.Event{Name: "ev_" + n, TaskID: "t1"}); err != nil {
			t.Fatal(err)
		}
	}
	var all []workspace.PositionedEvent
	end, err := w.ReadEventsFrom(t.Context(), "t1", 0, func(e workspace.PositionedEvent) { all = append(all, e) })
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 || all[0].Name != "task_created" || all[2].Name != "ev_b" {
		t.Fatalf("events %+v", all)
	}
	for i := 1; i < len(all); i++ {
		if all[i].Start != all[i-1].End {
			t.Errorf("event %d starts at %d, the one before ends at %d", i, all[i].Start, all[i-1].End)
		}
	}
	st, _ := os.Stat(filepath.Join(w.Dir(), "tasks/t1/events.log"))
	if end != st.Size() || all[2].End != end {
		t.Errorf("end %d, last event ends %d, file %d bytes", end, all[2].End, st.Size())
	}
	// From the middle: only the rest.
	var rest []workspace.PositionedEvent
	if _, err := w.ReadEventsFrom(t.Context(), "t1", all[1].Start, func(e workspace.PositionedEvent) { rest = append(rest, e) }); err != nil {
		t.Fatal(err)
	}
	if len(rest) != 2 || rest[0].Start != all[1].Start || rest[0].Name != all[1].Name {
		t.Errorf("from %d: %+v", all[1].Start, rest)
	}
	// A bad line and a partial line.
	f, err := os.OpenFile(filepath.Join(w.Dir(), "tasks/t1/events.log"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("not an event\n2024-01-15T10:00:00.000Z half")
	f.Close()
	var more []workspace.PositionedEvent
	next, err := w.ReadEventsFrom(t.Context(), "t1", end, func(e workspace.PositionedEvent) { more = append(more, e) })
	if err != nil || len(more) != 0 || next != end+int64(len("not an event\n")) {
		t.Errorf("after a bad and a partial line: %d events, next %d (want %d), %v", len(more), next, end+13, err)
	}
	if _, err := w.ReadEventsFrom(t.Context(), "nope", 0, func(workspace.PositionedEvent) {}); !errors.Is(err, workspace.ErrNotFound) {
		t.Errorf("missing task: %v", err)
	}
	if _, err := w.ReadEventsFrom(t.Context(), "../x", 0, func(workspace.PositionedEvent) {}); !errors.Is(err, workspace.ErrInvalid) {
		t.Errorf("bad id: %v", err)
	}
	if _, err := w.ReadEventsFrom(t.Context(), "t1", -1, func(workspace.PositionedEvent) {}); !errors.Is(err, workspace.ErrInvalid) {
		t.Errorf("negative offset: %v", err)
	}
}

func TestMemoryAgentsAndBackups(t *testing.T) {
	t.Parallel()
	w, _ := newWS(t)
	ctx := t.Context()
	for _, a := range []string{"zed", "alice"} {
		if _, err := w.StoreEntry(ctx, workspace.Scope{Kind: workspace.ScopeAgent, Agent: a}, workspace.StoreRequest{Key: "k", Description: "d", Value: []byte(`1`), Agent: a}); err != nil {
			t.Fatal(err)
		}
	}
	os.Mkdir(filepath.Join(w.Dir(), "memory/agents/.tmp"), 0o755)
	got, err := w.MemoryAgents(ctx)
	if err != nil || len(got) != 2 || got[0] != "alice" || got[1] != "zed" {
		t.Errorf("MemoryAgents = %v, %v", got, err)
	}
	newTask(t, w, "t1")
	if b, err := w.ListBackups(ctx, "t1"); err != nil || len(b) != 0 {
		t.Errorf("ListBackups of a new task = %v, %v", b, err)
	}
	if _, err := w.ListBackups(ctx, "nope"); !errors.Is(err, workspace.ErrNotFound) {
		t.Errorf("ListBackups of a missing task: %v", err)
	}
}
