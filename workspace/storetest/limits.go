package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/workspace"
)

// testBadInput is BadInput as a part of the suite, with Snapshot telling
// whether a refused write changed the store.
func testBadInput(t *testing.T, s workspace.Store, _ Hooks) {
	BadInput(t, s, Snapshot(s))
}

// Snapshot returns a dump of what s holds as its readers give it: tasks,
// threads, plans, reviews, journals, agent cards and the entries of every
// scope, values included. Events, states and locks are left out: the
// daemon serving s writes them on its own time. A store's own test may
// dump more (its rows or files) for BadInput.
func Snapshot(s workspace.Store) func(t *testing.T) string {
	return func(t *testing.T) string {
		t.Helper()
		var b strings.Builder
		put := func(what string, v any, err error) {
			if err != nil && !errors.Is(err, workspace.ErrNotFound) {
				t.Fatalf("snapshot %s: %v", what, err)
			}
			data, _ := json.Marshal(v)
			fmt.Fprintf(&b, "%s: %s %v\n", what, data, err != nil)
		}
		cards, err := s.LoadAgents(bg)
		put("agents", cards, err)
		ids, err := s.TaskIDs(bg)
		put("tasks", ids, err)
		for _, id := range ids {
			snapshotTask(t, s, id, put)
		}
		dumpScope(t, s, workspace.Scope{Kind: workspace.ScopeGlobal}, put)
		agents, err := s.MemoryAgents(bg)
		put("memory agents", agents, err)
		for _, a := range agents {
			dumpScope(t, s, workspace.Scope{Kind: workspace.ScopeAgent, Agent: a}, put)
		}
		return b.String()
	}
}

func snapshotTask(t *testing.T, s workspace.Store, id string, put func(string, any, error)) {
	t.Helper()
	task, err := s.GetTask(bg, id)
	put("task "+id, task, err)
	plan, err := s.ReadPlan(bg, id, 0)
	put("plan of "+id, plan, err)
	reviews, _, err := s.ListReviews(bg, id)
	put("reviews of "+id, reviews, err)
	journal, err := s.ReadJournal(bg, id)
	put("journal of "+id, journal, err)
	threads, err := s.ListThreads(bg, id)
	put("threads of "+id, threads, err)
	dumpScope(t, s, workspace.Scope{Kind: workspace.ScopeThread, TaskID: id}, put)
	for _, th := range threads {
		dumpScope(t, s, workspace.Scope{Kind: workspace.ScopeSession, TaskID: id, ThreadID: th.ID}, put)
	}
}

func dumpScope(t *testing.T, s workspace.Store, sc workspace.Scope, put func(string, any, error)) {
	t.Helper()
	what := fmt.Sprintf("%s %s/%s/%s", sc.Kind, sc.TaskID, sc.ThreadID, sc.Agent)
	items, err := s.ListEntries(bg, sc)
	put(what, items, err)
	for _, it := range items {
		e, err := s.GetEntry(bg, sc, it.Key)
		put(what+" "+it.Key, e, err)
	}
}

// nested is a JSON array nested depth levels deep.
func nested(depth int) json.RawMessage {
	return json.RawMessage(strings.Repeat("[", depth) + strings.Repeat("]", depth))
}

// testDepth: a value nested up to the depth limit is stored, read back,
// listed and updated; one level more is refused and writes nothing. The
// write and the read apply the same limit.
func testDepth(t *testing.T, s workspace.Store, _ Hooks) {
	withThread(t, s)
	limit := s.Settings().WithDefaults().Limits.MaxDepth
	for _, sc := range scopes() {
		for _, depth := range []int{limit - 1, limit} {
			key := fmt.Sprintf("depth %d", depth)
			_, err := s.StoreEntry(bg, sc, workspace.StoreRequest{Key: key, Value: nested(depth), Agent: "a"})
			ok(t, err, fmt.Sprintf("%s: store %s", sc.Kind, key))
			e, err := s.GetEntry(bg, sc, key)
			if err != nil || !sameValue(e.Value, nested(depth)) {
				t.Fatalf("%s: %s read back as %.40s…, %v", sc.Kind, key, e.Value, err)
			}
			_, err = s.UpdateEntry(bg, sc, workspace.UpdateRequest{Key: key, Value: nested(depth), Agent: "a"})
			ok(t, err, fmt.Sprintf("%s: update %s", sc.Kind, key))
			if e, err := s.GetEntry(bg, sc, key); err != nil || e.Version != 2 {
				t.Fatalf("%s: %s after update: version %d, %v; want 2", sc.Kind, key, e.Version, err)
			}
		}
		items, err := s.ListEntries(bg, sc)
		ok(t, err, "list")
		if len(items) != 2 {
			t.Fatalf("%s: listed %d entries, want the 2 at and under the limit: %+v", sc.Kind, len(items), items)
		}
		over := nested(limit + 1)
		_, err = s.StoreEntry(bg, sc, workspace.StoreRequest{Key: "over", Value: over, Agent: "a"})
		is(t, err, workspace.ErrInvalid, fmt.Sprintf("%s: store %d levels", sc.Kind, limit+1))
		_, err = s.UpdateEntry(bg, sc, workspace.UpdateRequest{Key: fmt.Sprintf("depth %d", limit), Value: over, Agent: "a"})
		is(t, err, workspace.ErrInvalid, fmt.Sprintf("%s: update to %d levels", sc.Kind, limit+1))
		if _, err := s.GetEntry(bg, sc, "over"); !errors.Is(err, workspace.ErrNotFound) {
			t.Fatalf("%s: a refused value was kept: %v", sc.Kind, err)
		}
	}
}

// testNULText: a NUL in the text of a task, a thread, a plan, a review and
// an output (JSON documents, where it is the escape \u0000) is kept
// exactly, and the task goes on: the daemon journals the plan, and a
// review is written after it. A skill holding a NUL is refused.
func testNULText(t *testing.T, s workspace.Store, h Hooks) {
	const nul = "with \x00 a NUL"
	_, err := s.CreateTask(bg, workspace.NewTaskRequest{ID: "t1", Description: nul, Context: nul, Constraints: []string{nul}})
	ok(t, err, "create task")
	if task, err := s.GetTask(bg, "t1"); err != nil || task.Description != nul || task.Context != nul {
		t.Fatalf("task read back as %q, %q, %v", task.Description, task.Context, err)
	}
	_, err = s.NewThread(bg, workspace.NewThreadRequest{TaskID: "t1", ID: "th1", From: "coordinator", To: "worker_1", Message: nul, Concern: nul})
	ok(t, err, "new thread")
	if th, err := s.GetThread(bg, "t1", "th1"); err != nil || th.Message != nul || th.Concern != nul {
		t.Fatalf("thread read back as %q, %q, %v", th.Message, th.Concern, err)
	}
	plan := `{"summary":"plan \u0000","subtasks":[{"id":"a","description":"do \u0000 a"}]}`
	_, err = s.WritePlan(bg, "t1", "coordinator", []byte(plan))
	ok(t, err, "write plan")
	_, err = s.WriteDone(bg, workspace.DoneRequest{TaskID: "t1", Agent: "coordinator", OutputFile: "plan.json"})
	ok(t, err, "done plan")
	h.Apply(t, s)
	if p, err := s.ReadPlan(bg, "t1", 0); err != nil || p.Summary != "plan \x00" || p.Subtasks[0].Description != "do \x00 a" {
		t.Fatalf("plan read back as %+v, %v", p, err)
	}
	rel, err := s.WriteReview(bg, "t1", "r1", "reviewer", []byte(`{"type":"plan_review","verdict":"approved","notes":"ok \u0000"}`))
	ok(t, err, "write a review after a plan holding \\u0000 was journaled")
	_, err = s.WriteDone(bg, workspace.DoneRequest{TaskID: "t1", Agent: "reviewer", OutputFile: rel})
	ok(t, err, "done review")
	h.Apply(t, s)
	st, err := s.ReadState(bg, "t1")
	if err != nil || st.Status != "executing" {
		t.Fatalf("after the review: status %q, %v; errors %v", st.Status, err, st.Errors)
	}
	if doc, err := s.ReadTaskDoc(bg, "t1", rel); err != nil || !strings.Contains(string(doc), `"ok \u0000"`) {
		t.Fatalf("review read back as %s, %v", doc, err)
	}
	out, err := s.WriteOutput(bg, "t1", "a", "worker_1", []byte(`{"summary":"r \u0000"}`))
	ok(t, err, "write output")
	if doc, err := s.ReadTaskDoc(bg, "t1", out); err != nil || !strings.Contains(string(doc), `"r \u0000"`) {
		t.Fatalf("output read back as %s, %v", doc, err)
	}
	// A skill is Markdown kept as text: a NUL in it is refused, and
	// nothing is kept.
	_, err = s.AddSkill(bg, workspace.AddSkillRequest{Name: "grids", Data: []byte(skillGrids + "\nnul \x00 here\n"), Agent: "a"})
	is(t, err, workspace.ErrInvalid, "add a skill holding a NUL")
	_, err = s.GetSkill(bg, "grids")
	is(t, err, workspace.ErrNotFound, "get the refused skill")
}
