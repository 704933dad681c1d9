package web

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/demo"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"
)

// demoPanel runs the demo on a fresh tree and serves the tree it left,
// with no daemon (the demo's stops with it).
func demoPanel(t *testing.T) *panel {
	t.Helper()
	root := filepath.Join(t.TempDir(), "demo")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := demo.Run(ctx, demo.Config{Root: root, TimeScale: 0.01, Quiet: true}); err != nil {
		t.Fatalf("demo: %v", err)
	}
	ws, err := files.Open(root, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return servePanel(t, ws, Config{})
}

// TestViewsOfADemoRun: the views for people watching a run, on what the
// demo leaves: plan versions compared in words, an output's versions,
// the replay, the Gantt chart, search, and the paged task list.
func TestViewsOfADemoRun(t *testing.T) {
	t.Parallel()
	p := demoPanel(t)
	ctx := context.Background()
	task := demo.TaskID

	t.Run("plan diff", func(t *testing.T) {
		var d PlanDiff
		r := p.get("/api/tasks/" + task + "/plans/diff")
		r.json(t, &d)
		if r.code != 200 || d.From != 1 || d.To != 2 || d.Same() {
			t.Fatalf("%d: %s", r.code, r.body)
		}
		if r := p.get("/api/tasks/" + task + "/plans/diff?from=2&to=2"); !strings.Contains(r.body, `"changed":[]`) || !strings.Contains(r.body, `"added":[]`) {
			t.Errorf("a version against itself: %s", r.body)
		}
		if r := p.get("/api/tasks/" + task + "/plans/diff?from=9"); r.code != 400 {
			t.Errorf("a version past the current one: %d %s", r.code, r.body)
		}
	})

	t.Run("output versions", func(t *testing.T) {
		var h struct{ Versions []OutputVersion }
		p.get("/api/tasks/"+task+"/outputs/"+demo.FailingSubtask+"/history").json(t, &h)
		if len(h.Versions) != 2 || h.Versions[0].Version != 1 || h.Versions[1].Version != 0 {
			t.Fatalf("versions of %s: %+v", demo.FailingSubtask, h.Versions)
		}
		var d struct {
			From, To int
			Changes  []Change
		}
		r := p.get("/api/tasks/" + task + "/outputs/" + demo.FailingSubtask + "/diff")
		r.json(t, &d)
		fields := map[string]bool{}
		for _, c := range d.Changes {
			fields[c.Field] = true
		}
		if d.From != 1 || d.To != 0 || !fields["status"] {
			t.Errorf("the failed attempt against the current output: %s", r.body)
		}
		if r := p.get("/api/tasks/" + task + "/outputs/st_1/diff?from=3"); r.code != 404 {
			t.Errorf("a version never kept: %d %s", r.code, r.body)
		}
	})

	t.Run("replay", func(t *testing.T) {
		want, err := p.ws.ReadState(ctx, task)
		if err != nil {
			t.Fatal(err)
		}
		var last ReplayView
		p.get("/api/tasks/"+task+"/state").json(t, &last)
		if last.Seq != want.JournalSeq || last.LastSeq != want.JournalSeq {
			t.Fatalf("seq %d, last %d; the state is at %d", last.Seq, last.LastSeq, want.JournalSeq)
		}
		a, _ := json.Marshal(last.State)
		b, _ := json.Marshal(want)
		if string(a) != string(b) {
			t.Errorf("the fold of the whole journal is not state.json:\n%s\n%s", a, b)
		}
		var first ReplayView
		p.get("/api/tasks/"+task+"/state?seq=0").json(t, &first)
		if first.State.Status != "planning" || first.State.JournalSeq != 0 || first.Plan != nil {
			t.Errorf("before the first record: %+v", first.State)
		}
		done := -1
		for seq := int64(1); seq <= want.JournalSeq; seq++ {
			var v ReplayView
			p.get(fmt.Sprintf("/api/tasks/%s/state?seq=%d", task, seq)).json(t, &v)
			n := 0
			for _, s := range v.State.Subtasks {
				if s.Status == "completed" {
					n++
				}
			}
			if v.State.JournalSeq != seq || n < done {
				t.Fatalf("seq %d: journal_seq %d, %d completed after %d", seq, v.State.JournalSeq, n, done)
			}
			done = n
		}
		if r := p.get("/api/tasks/" + task + "/state?seq=x"); r.code != 400 {
			t.Errorf("seq=x: %d", r.code)
		}
	})

	t.Run("gantt", func(t *testing.T) {
		var g struct{ Spans []Span }
		p.get("/api/tasks/"+task+"/gantt").json(t, &g)
		st, _ := p.ws.ReadState(ctx, task)
		per := map[string][]Span{}
		for _, s := range g.Spans {
			per[s.Subtask] = append(per[s.Subtask], s)
			if s.End == nil || s.End.Before(s.Start) || s.Worker == "" {
				t.Errorf("span %+v", s)
			}
		}
		for id, ss := range st.Subtasks {
			spans := per[id]
			if len(spans) != ss.Attempts || spans[len(spans)-1].Outcome != SpanCompleted || spans[len(spans)-1].Worker != ss.Worker {
				t.Errorf("%s: %d attempts, worker %s; spans %+v", id, ss.Attempts, ss.Worker, spans)
			}
		}
		if f := per[demo.FailingSubtask]; len(f) != 2 || f[0].Outcome != SpanFailed || !f[0].Retry || f[1].Attempt != 2 {
			t.Errorf("the retried subtask: %+v", f)
		}
	})

	t.Run("search", func(t *testing.T) {
		var res SearchResult
		p.get("/api/tasks/"+demo.ARCTaskID+"/search?q=PATTERN").json(t, &res)
		kinds := map[string]bool{}
		for _, h := range res.Hits {
			kinds[h.Kind] = true
			if !strings.Contains(strings.ToLower(h.Text), "pattern") {
				t.Errorf("a hit without the text: %+v", h)
			}
		}
		if !kinds["env"] || !kinds["event"] {
			t.Errorf("hits %+v, want some in env data and events", res.Hits)
		}
		p.get("/api/tasks/"+task+"/search?q=rate+limit").json(t, &res)
		found := false
		for _, h := range res.Hits {
			found = found || h.Kind == "output" && h.Ref == demo.FailingSubtask
		}
		if !found {
			t.Errorf("no hit in the output of %s: %+v", demo.FailingSubtask, res.Hits)
		}
		p.get("/api/tasks/"+task+"/search?q=work_&limit=3").json(t, &res)
		if len(res.Hits) != 3 || !res.More {
			t.Errorf("limit 3: %d hits, more %v", len(res.Hits), res.More)
		}
		if r := p.get("/api/tasks/" + task + "/search?q="); r.code != 400 {
			t.Errorf("an empty query: %d", r.code)
		}
	})

	t.Run("task pages", func(t *testing.T) {
		var pg TaskPage
		p.get("/api/tasks?after=&limit=1").json(t, &pg)
		if len(pg.Tasks) != 1 || pg.Tasks[0].ID != demo.ARCTaskID || pg.Next != demo.ARCTaskID || pg.Counts["completed"] != 1 {
			t.Fatalf("the first page: %+v", pg)
		}
		next := pg.Next
		pg = TaskPage{}
		p.get("/api/tasks?limit=1&after="+next).json(t, &pg)
		if len(pg.Tasks) != 1 || pg.Tasks[0].ID != task || pg.Next != "" {
			t.Fatalf("the second page: %+v", pg)
		}
		p.get("/api/tasks?after=&q=REST&status=completed").json(t, &pg)
		if len(pg.Tasks) != 1 || pg.Tasks[0].ID != task {
			t.Errorf("filtered: %+v", pg)
		}
		p.get("/api/tasks?after=&status=failed").json(t, &pg)
		if len(pg.Tasks) != 0 {
			t.Errorf("no task failed: %+v", pg)
		}
	})

	t.Run("serving", func(t *testing.T) {
		var v ServingView
		p.get("/api/serving").json(t, &v)
		if v != (ServingView{Serving: false, Known: true}) {
			t.Errorf("with no daemon: %+v", v)
		}
		startDaemon(t, p.ws)
		p.s.servingProbe.mu.Lock()
		p.s.servingProbe.at = time.Time{} // look again now
		p.s.servingProbe.mu.Unlock()
		p.get("/api/serving").json(t, &v)
		if v != (ServingView{Serving: true, Known: true}) {
			t.Errorf("with a daemon: %+v", v)
		}
	})
}

// TestStateAtIsTheFold: StateAt of every prefix is machine's Replay of
// that prefix, and past the end it is the whole fold.
func TestStateAtIsTheFold(t *testing.T) {
	t.Parallel()
	p := demoPanel(t)
	ctx := context.Background()
	task, _ := p.ws.GetTask(ctx, demo.TaskID)
	recs, err := p.ws.ReadJournal(t.Context(), demo.TaskID)
	if err != nil || len(recs) == 0 {
		t.Fatalf("journal: %v (%d records)", err, len(recs))
	}
	all, err := StateAt(task, nil, recs, -1)
	if err != nil {
		t.Fatal(err)
	}
	past, _ := StateAt(task, nil, recs, recs[len(recs)-1].Seq+10)
	if !reflect.DeepEqual(all, past) || all.JournalSeq != recs[len(recs)-1].Seq {
		t.Errorf("past the end: seq %d, want %d", past.JournalSeq, all.JournalSeq)
	}
}
