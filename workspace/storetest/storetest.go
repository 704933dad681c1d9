// Package storetest is the conformance suite every store passes: each
// operation, each error kind (errors.Is on the sentinels of package
// workspace), concurrency and ordering, and what the single writer
// promises on every store — each part served by the real daemon
// (workspace/daemon). A backend runs it from a test of its own package:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, openFresh)
//	}
//
// open must return a new, empty, initialised workspace for each call (the
// suite runs its parts in parallel); the suite serves it with a daemon
// and closes it.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workspaced/workspaced/friction"
	"github.com/workspaced/workspaced/internal/servetest"
	"github.com/workspaced/workspaced/retention"
	"github.com/workspaced/workspaced/workspace"
)

// Hooks are what a part of the suite does beside the store.
type Hooks struct {
	// Apply returns once the daemon serving s has applied every marker
	// the suite dropped.
	Apply func(t *testing.T, s workspace.Store)
}

// Run runs the whole suite against fresh stores from open, each served by
// the real daemon.
func Run(t *testing.T, open func(t *testing.T) workspace.Served) {
	RunServed(t, open, servetest.Options{})
}

// RunServed is Run with the daemon configured by opt: a store's other
// wake-up sources, say.
func RunServed(t *testing.T, open func(t *testing.T) workspace.Served, opt servetest.Options) {
	fresh := func(t *testing.T, tune func(*servetest.Options)) workspace.Store {
		t.Helper()
		s := open(t)
		t.Cleanup(func() { _ = s.Close() })
		c := opt
		if tune != nil {
			tune(&c)
		}
		return &counted{Served: s, dropped: map[string]int{}, daemon: servetest.StartWith(t, s, c), opt: c}
	}
	h := Hooks{Apply: awaitApplied}
	parts := []struct {
		name string
		run  func(t *testing.T, s workspace.Store, h Hooks)
		tune func(*servetest.Options) // the daemon this part needs, when not opt
	}{
		{"Settings", testSettings, nil},
		{"Agents", testAgents, nil},
		{"Tasks", testTasks, nil},
		{"Plans", testPlans, nil},
		{"Amendments", testAmendments, nil},
		{"PlanClosed", testPlanClosed, nil},
		{"PlanRace", testPlanRace, nil},
		{"OutputsAndReviews", testProducts, nil},
		{"Threads", testThreads, nil},
		{"Entries", testEntries, nil},
		{"EntryErrors", testEntryErrors, nil},
		{"BadInput", testBadInput, nil},
		{"Depth", testDepth, nil},
		{"NULText", testNULText, nil},
		{"NoLostUpdate", testNoLostUpdate, nil},
		{"CreateOnly", testCreateOnly, nil},
		{"DeleteIfVersion", testDeleteIfVersion, nil},
		{"Markers", testMarkers, nil},
		{"FirstClaimWins", testFirstClaimWins, nil},
		{"Events", testEvents, nil},
		{"FollowEvents", testFollowEvents, nil},
		{"EventPositions", testEventPositions, nil},
		{"MemoryAgents", testMemoryAgents, nil},
		{"Memory", testMemory, nil},
		{"MemoryCAS", testMemoryCAS, nil},
		{"MemoryTTL", testMemoryTTL, nil},
		{"MemoryBadInput", testMemoryBadInput, nil},
		{"MemoryBatch", testMemoryBatch, nil},
		{"MemoryPlainBatch", testMemoryPlainBatch, nil},
		{"MemoryBatchBadInput", testMemoryBatchBadInput, nil},
		{"MemoryBatchRace", testMemoryBatchRace, nil},
		{"GrantGuard", testGrantGuard, nil},
		{"TokenInEvents", testTokenInEvents, nil},
		{"EntryHistory", testEntryHistory, nil},
		{"HistoryRetention", testHistoryRetention, nil},
		{"Watch", testWatch, nil},
		{"Friction", testFriction, nil},
		{"Locks", testLocks, nil},
		{"Backups", testBackups, nil},
		{"Retention", testRetention, nil},
		{"Skills", testSkills, nil},
		{"TaskFiles", testTaskFiles, nil},
		{"Served", testServed, nil},
		{"ReusedMarkerName", testReusedName, nil},
		{"TokenInMarkerEvents", testTokenInMarkerEvents, nil},
		{"Verdicts", testVerdicts, nil},
		{"DaemonFriction", testDaemonFriction, nil},
		{"Timeouts", testTimeouts, timeoutsLater},
	}
	for _, p := range parts {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			p.run(t, fresh(t, p.tune), h)
		})
	}
}

var bg = context.Background()

// is fails t unless err is of kind.
func is(t *testing.T, err, kind error, what string) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("%s: got error %v, want one that is %v", what, err, kind)
	}
}

func ok(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func newTask(t *testing.T, s workspace.Store, id string) workspace.Task {
	t.Helper()
	task, err := s.CreateTask(bg, workspace.NewTaskRequest{ID: id, Description: "task " + id})
	ok(t, err, "create task "+id)
	return task
}

func planJSON(subtasks ...string) []byte {
	subs := make([]map[string]any, len(subtasks))
	for i, id := range subtasks {
		subs[i] = map[string]any{"id": id, "description": "do " + id}
	}
	data, _ := json.Marshal(map[string]any{"summary": "the plan", "subtasks": subs})
	return data
}

// approved makes task id executing with a plan of subtasks: the plan is
// proposed, reviewed and approved, each step applied.
func approved(t *testing.T, s workspace.Store, h Hooks, id string, subtasks ...string) {
	t.Helper()
	newTask(t, s, id)
	_, err := s.WritePlan(bg, id, "coordinator", planJSON(subtasks...))
	ok(t, err, "write plan")
	_, err = s.WriteDone(t.Context(), workspace.DoneRequest{TaskID: id, Agent: "coordinator", OutputFile: "plan.json"})
	ok(t, err, "done plan")
	h.Apply(t, s)
	rv, _ := json.Marshal(map[string]any{"type": "plan_review", "verdict": "approved"})
	rel, err := s.WriteReview(t.Context(), id, "plan_review_1", "reviewer", rv)
	ok(t, err, "write review")
	_, err = s.WriteDone(t.Context(), workspace.DoneRequest{TaskID: id, Agent: "reviewer", OutputFile: rel})
	ok(t, err, "done review")
	h.Apply(t, s)
	st, err := s.ReadState(t.Context(), id)
	ok(t, err, "read state")
	if st.PlanStatus != "approved" || st.Status != "executing" {
		t.Fatalf("after an approved plan review: plan_status %q status %q, want approved and executing", st.PlanStatus, st.Status)
	}
	head, err := s.ReadStateHead(t.Context(), id)
	ok(t, err, "read the state's head")
	if want := (workspace.StateHead{TaskID: id, Status: st.Status, Phase: st.Phase, JournalSeq: st.JournalSeq}); head != want || head.JournalSeq == 0 {
		t.Fatalf("the state's head = %+v, want %+v (the state's own), past journal_seq 0", head, want)
	}
}

func testSettings(t *testing.T, s workspace.Store, _ Hooks) {
	st := s.Settings().WithDefaults()
	if st.LockTimeout <= 0 || st.Limits.ValueMaxBytes <= 0 {
		t.Fatalf("settings with defaults have no lock timeout or value limit: %+v", st)
	}
	now := s.Now()
	if now.IsZero() || !now.Equal(now.Truncate(time.Millisecond)) {
		t.Fatalf("Now() = %v: want a time kept to the millisecond", now)
	}
}

func testAgents(t *testing.T, s workspace.Store, _ Hooks) {
	cards, err := s.LoadAgents(t.Context())
	ok(t, err, "load agents of a fresh workspace")
	if len(cards.Agents) != 0 {
		t.Fatalf("fresh workspace has cards: %+v", cards)
	}
	want := workspace.AgentCards{Agents: []workspace.AgentCard{
		{Name: "coordinator", Role: "coordinator", Capabilities: []string{"plan"}},
		{Name: "worker_1", Description: "does the work"},
	}}
	ok(t, s.SaveAgents(bg, want), "save agents")
	got, err := s.LoadAgents(t.Context())
	ok(t, err, "load agents")
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("cards read back %+v, want %+v", got, want)
	}
	if c, found := got.Card("worker_1"); !found || c.Description != "does the work" {
		t.Fatalf("card worker_1 = %+v, %v", c, found)
	}
	err = s.SaveAgents(bg, workspace.AgentCards{Agents: []workspace.AgentCard{{Description: "no name"}}})
	is(t, err, workspace.ErrInvalid, "save a card without a name")
	got, err = s.LoadAgents(t.Context())
	ok(t, err, "load agents after a refused save")
	if len(got.Agents) != 2 {
		t.Fatalf("a refused save changed the cards: %+v", got)
	}
}

func testTasks(t *testing.T, s workspace.Store, h Hooks) {
	for _, id := range []string{"t_b", "t_a", "t_c"} {
		task := newTask(t, s, id)
		if task.ID != id || task.CreatedAt.IsZero() {
			t.Fatalf("created %+v", task)
		}
	}
	got, err := s.GetTask(t.Context(), "t_a")
	ok(t, err, "get task")
	if got.ID != "t_a" || got.Description != "task t_a" {
		t.Fatalf("get task t_a = %+v", got)
	}
	ids, err := s.TaskIDs(t.Context())
	ok(t, err, "task ids")
	if !slices.Equal(ids, []string{"t_a", "t_b", "t_c"}) {
		t.Fatalf("task ids %v, want sorted t_a t_b t_c", ids)
	}
	list, err := s.ListTasks(t.Context())
	ok(t, err, "list tasks")
	if len(list) != 3 || list[0].Task.ID != "t_a" {
		t.Fatalf("list tasks = %+v", list)
	}
	gen, err := s.CreateTask(bg, workspace.NewTaskRequest{Description: "no id given"})
	ok(t, err, "create task without id")
	if gen.ID == "" {
		t.Fatal("a task created without an id got none")
	}

	_, err = s.CreateTask(bg, workspace.NewTaskRequest{ID: "t_a", Description: "again"})
	is(t, err, workspace.ErrConflict, "create an existing task")
	if got, _ := s.GetTask(t.Context(), "t_a"); got.Description != "task t_a" {
		t.Fatalf("a refused create changed the task: %+v", got)
	}
	for _, bad := range []string{"../x", "a/b", "", "x y", "'); DROP TABLE tasks; --"} {
		_, err = s.CreateTask(bg, workspace.NewTaskRequest{ID: bad, Description: "bad"})
		if bad == "" {
			continue // generated
		}
		is(t, err, workspace.ErrInvalid, fmt.Sprintf("create task %q", bad))
	}
	_, err = s.CreateTask(bg, workspace.NewTaskRequest{ID: "t_nodesc"})
	is(t, err, workspace.ErrInvalid, "create a task without a description")
	_, err = s.GetTask(t.Context(), "t_none")
	is(t, err, workspace.ErrNotFound, "get a missing task")
	first := awaitState(t, s, "t_a", func(st workspace.State) bool { return true })
	if first.Status != "planning" || first.JournalSeq != 0 || first.TaskID != "t_a" {
		t.Fatalf("a new task's first state = %+v, want planning at journal_seq 0", first)
	}
	_, err = s.ReadState(t.Context(), "t_none")
	is(t, err, workspace.ErrNotFound, "read the state of a missing task")
	_, err = s.ReadStateHead(t.Context(), "t_none")
	is(t, err, workspace.ErrNotFound, "read the state's head of a missing task")
}

func testPlans(t *testing.T, s workspace.Store, _ Hooks) {
	newTask(t, s, "t1")
	_, err := s.ReadPlan(t.Context(), "t1", 0)
	is(t, err, workspace.ErrNotFound, "read the plan of a task without one")
	for v := 1; v <= 3; v++ {
		p, err := s.WritePlan(bg, "t1", "coordinator", planJSON("s1", "s"+strconv.Itoa(v+1)))
		ok(t, err, "write plan")
		if p.Version != v || p.TaskID != "t1" || p.CreatedBy != "coordinator" {
			t.Fatalf("plan write %d gave version %d task %q by %q", v, p.Version, p.TaskID, p.CreatedBy)
		}
	}
	cur, err := s.ReadPlan(t.Context(), "t1", 0)
	ok(t, err, "read current plan")
	if cur == nil || cur.Version != 3 || cur.Subtasks[1].ID != "s4" {
		t.Fatalf("current plan = %+v, want version 3", cur)
	}
	for v := 1; v <= 3; v++ {
		p, err := s.ReadPlan(t.Context(), "t1", v)
		ok(t, err, "read plan version "+strconv.Itoa(v))
		if p.Version != v || p.Subtasks[1].ID != "s"+strconv.Itoa(v+1) {
			t.Fatalf("plan version %d read as %+v", v, p)
		}
	}
	doc, err := s.ReadTaskDoc(t.Context(), "t1", "plans/plan_v1.json")
	ok(t, err, "read plans/plan_v1.json")
	var d struct{ Version int }
	if json.Unmarshal(doc, &d) != nil || d.Version != 1 {
		t.Fatalf("plans/plan_v1.json = %s", doc)
	}
	_, err = s.ReadPlan(t.Context(), "t1", 9)
	is(t, err, workspace.ErrNotFound, "read a plan version never written")
	_, err = s.WritePlan(bg, "t1", "coordinator", []byte(`{"subtasks": [`))
	is(t, err, workspace.ErrInvalid, "write a plan that is not JSON")
	_, err = s.WritePlan(bg, "t1", "coordinator", []byte(`{"subtasks": [{"id": "../a", "description": "x"}]}`))
	is(t, err, workspace.ErrInvalid, "write a plan with a bad subtask id")
	_, err = s.WritePlan(bg, "t1", "coordinator", []byte(`{"subtasks": "no"}`))
	is(t, err, workspace.ErrInvalid, "write a plan against its schema")
	if cur, _ := s.ReadPlan(t.Context(), "t1", 0); cur.Version != 3 {
		t.Fatalf("refused plan writes changed the plan: version %d", cur.Version)
	}
	_, err = s.WritePlan(bg, "t_none", "coordinator", planJSON("s1"))
	is(t, err, workspace.ErrNotFound, "write the plan of a missing task")
}

func testProducts(t *testing.T, s workspace.Store, h Hooks) {
	approved(t, s, h, "t1", "s1")
	out := func(summary string) []byte {
		data, _ := json.Marshal(map[string]any{"status": "completed", "summary": summary})
		return data
	}
	rel, err := s.WriteOutput(t.Context(), "t1", "s1", "worker_1", out("first"))
	ok(t, err, "write output")
	if rel != "outputs/s1.json" {
		t.Fatalf("output named %q, want outputs/s1.json", rel)
	}
	// Not yet reported done: replacing keeps the first in history.
	_, err = s.WriteOutput(t.Context(), "t1", "s1", "worker_1", out("second"))
	ok(t, err, "replace an output not reported")
	p, err := s.ReadProduct(t.Context(), "t1", rel)
	ok(t, err, "read product")
	if p.Kind != workspace.ProductOutput || p.Output == nil || p.Output.Summary != "second" || p.Output.SubtaskID != "s1" || p.Output.WorkerID != "worker_1" {
		t.Fatalf("product = %+v (output %+v)", p, p.Output)
	}
	ok(t, s.ValidateProduct(t.Context(), "t1", rel), "validate product")
	hist, err := s.ReadTaskFile(t.Context(), "t1", "outputs/history/s1.v1.json", 1<<20)
	ok(t, err, "read the replaced output's history")
	var o workspace.Output
	if json.Unmarshal(hist, &o) != nil || o.Summary != "first" {
		t.Fatalf("history of s1 = %s", hist)
	}
	// Once its subtask is completed, it is final.
	_, err = s.WriteClaim(t.Context(), "t1", "worker_1", "s1")
	ok(t, err, "claim")
	_, err = s.WriteDone(t.Context(), workspace.DoneRequest{TaskID: "t1", Agent: "worker_1", OutputFile: rel})
	ok(t, err, "done")
	h.Apply(t, s)
	_, err = s.WriteOutput(t.Context(), "t1", "s1", "worker_1", out("third"))
	is(t, err, workspace.ErrConflict, "replace an output a done marker reports")
	doc, err := s.ReadTaskDoc(t.Context(), "t1", rel)
	ok(t, err, "read task doc")
	if json.Unmarshal(doc, &o) != nil || o.Summary != "second" {
		t.Fatalf("a refused replace changed the output: %s", doc)
	}

	_, err = s.WriteOutput(t.Context(), "t1", "s2", "worker_1", []byte(`{"status": 7}`))
	is(t, err, workspace.ErrInvalid, "write an output against its schema")
	_, err = s.WriteOutput(t.Context(), "t1", "../s2", "worker_1", out("x"))
	is(t, err, workspace.ErrInvalid, "write an output with a bad subtask id")
	_, err = s.WriteOutput(t.Context(), "t_none", "s1", "worker_1", out("x"))
	is(t, err, workspace.ErrNotFound, "write the output of a missing task")
	_, err = s.ReadTaskDoc(t.Context(), "t1", "outputs/s9.json")
	is(t, err, workspace.ErrNotFound, "read a missing output")
	_, err = s.ReadProduct(t.Context(), "t1", "outputs/s9.json")
	if err == nil {
		t.Fatal("read a missing product: no error")
	}

	at := func(min int) string { return time.Date(2025, 1, 1, 0, min, 0, 0, time.UTC).Format(time.RFC3339) }
	for _, r := range []struct{ id, at string }{{"r_b", at(1)}, {"r_c", at(0)}, {"r_a", at(1)}} {
		data, _ := json.Marshal(map[string]any{"type": "output_review", "target": "s1", "verdict": "approved", "reviewed_at": r.at})
		rel, err := s.WriteReview(t.Context(), "t1", r.id, "reviewer", data)
		ok(t, err, "write review "+r.id)
		if rel != "reviews/"+r.id+".json" {
			t.Fatalf("review named %q", rel)
		}
	}
	reviews, skipped, err := s.ListReviews(t.Context(), "t1")
	ok(t, err, "list reviews")
	var ids []string
	for _, r := range reviews {
		ids = append(ids, r.ID)
	}
	if !slices.Equal(ids, []string{"r_c", "r_a", "r_b", "plan_review_1"}) || len(skipped) != 0 {
		t.Fatalf("reviews in order %v (skipped %v), want r_c r_a r_b plan_review_1 (by reviewed_at, then id)", ids, skipped)
	}
	if reviews[0].Reviewer != "reviewer" {
		t.Fatalf("review reviewer %q, want the writing agent", reviews[0].Reviewer)
	}
	_, err = s.WriteReview(t.Context(), "t1", "r_x", "reviewer", []byte(`{"type": "output_review", "verdict": "maybe"}`))
	is(t, err, workspace.ErrInvalid, "write a review with an unknown verdict")
	_, _, err = s.ListReviews(t.Context(), "t_none")
	is(t, err, workspace.ErrNotFound, "list the reviews of a missing task")
}

func testThreads(t *testing.T, s workspace.Store, _ Hooks) {
	newTask(t, s, "t1")
	newTask(t, s, "t2")
	root, err := s.GetThread(t.Context(), "t1", "t1")
	ok(t, err, "get the root thread")
	if root.TaskID != "t1" || root.ParentID != "" {
		t.Fatalf("root thread %+v", root)
	}
	child, err := s.NewThread(bg, workspace.NewThreadRequest{TaskID: "t1", ID: "th_child", From: "coordinator", To: "worker_1",
		Message: "look at the grids", Buffers: []string{"env:grid"}, SkillTags: []string{"arc"}})
	ok(t, err, "new thread")
	if child.ParentID != "t1" || child.Status != "active" || child.To != "worker_1" || child.CreatedAt.IsZero() {
		t.Fatalf("new thread %+v", child)
	}
	_, err = s.NewThread(bg, workspace.NewThreadRequest{TaskID: "t1", ID: "th_grand", ParentID: "th_child", From: "worker_1", To: "worker_2", Status: "pending"})
	ok(t, err, "new grandchild thread")
	got, err := s.GetThread(t.Context(), "t1", "th_child")
	ok(t, err, "get thread")
	if got.Message != "look at the grids" || !slices.Equal(got.Buffers, []string{"env:grid"}) {
		t.Fatalf("thread read back %+v", got)
	}
	list, err := s.ListThreads(t.Context(), "t1")
	ok(t, err, "list threads")
	var ids []string
	for _, th := range list {
		ids = append(ids, th.ID)
	}
	if len(ids) != 3 || ids[0] != "t1" || !slices.Contains(ids, "th_child") || !slices.Contains(ids, "th_grand") {
		t.Fatalf("threads %v, want the root first and both children", ids)
	}
	for i := 1; i < len(list); i++ {
		a, b := list[i-1], list[i]
		if a.CreatedAt.After(b.CreatedAt) || (a.CreatedAt.Equal(b.CreatedAt) && a.ID > b.ID) {
			t.Fatalf("threads out of order: %s then %s", a.ID, b.ID)
		}
	}
	task, err := s.ResolveThread(t.Context(), "th_grand")
	ok(t, err, "resolve thread")
	if task != "t1" {
		t.Fatalf("th_grand resolves to %q", task)
	}
	if task, err := s.ResolveThread(t.Context(), "t2"); err != nil || task != "t2" {
		t.Fatalf("a task id resolves to %q, %v", task, err)
	}
	progress, status := "half way", "done"
	up, err := s.UpdateThread(bg, "t1", "th_child", "worker_1", workspace.ThreadUpdate{Progress: &progress, Status: &status})
	ok(t, err, "update thread")
	if up.Progress != progress || up.Status != status || up.Message != "look at the grids" {
		t.Fatalf("updated thread %+v", up)
	}
	if got, _ := s.GetThread(t.Context(), "t1", "th_child"); got.Progress != progress || got.Status != status {
		t.Fatalf("update not kept: %+v", got)
	}

	_, err = s.NewThread(bg, workspace.NewThreadRequest{TaskID: "t1", ID: "th_child", From: "a", To: "b"})
	is(t, err, workspace.ErrConflict, "new thread with an existing id")
	_, err = s.NewThread(bg, workspace.NewThreadRequest{TaskID: "t1", ID: "th_x", ParentID: "th_none", From: "a", To: "b"})
	is(t, err, workspace.ErrNotFound, "new thread under a missing parent")
	_, err = s.NewThread(bg, workspace.NewThreadRequest{TaskID: "t_none", From: "a", To: "b"})
	is(t, err, workspace.ErrNotFound, "new thread in a missing task")
	_, err = s.NewThread(bg, workspace.NewThreadRequest{TaskID: "t1", ID: "../x", From: "a", To: "b"})
	is(t, err, workspace.ErrInvalid, "new thread with a bad id")
	_, err = s.GetThread(t.Context(), "t1", "th_none")
	is(t, err, workspace.ErrNotFound, "get a missing thread")
	_, err = s.GetThread(t.Context(), "t2", "th_child")
	is(t, err, workspace.ErrNotFound, "get a thread of another task")
	_, err = s.ResolveThread(t.Context(), "th_none")
	is(t, err, workspace.ErrNotFound, "resolve a missing thread")
	bad := "sleeping"
	_, err = s.UpdateThread(bg, "t1", "th_child", "worker_1", workspace.ThreadUpdate{Status: &bad})
	is(t, err, workspace.ErrInvalid, "update a thread to an unknown status")
	_, err = s.UpdateThread(bg, "t1", "th_none", "worker_1", workspace.ThreadUpdate{Progress: &progress})
	is(t, err, workspace.ErrNotFound, "update a missing thread")
}

// scopes are the four entry scopes of task t1 (thread th1 of it).
func scopes() []workspace.Scope {
	return []workspace.Scope{
		{Kind: workspace.ScopeThread, TaskID: "t1"},
		{Kind: workspace.ScopeSession, TaskID: "t1", ThreadID: "th1"},
		{Kind: workspace.ScopeAgent, Agent: "worker_1"},
		{Kind: workspace.ScopeGlobal},
	}
}

func withThread(t *testing.T, s workspace.Store) {
	t.Helper()
	newTask(t, s, "t1")
	_, err := s.NewThread(bg, workspace.NewThreadRequest{TaskID: "t1", ID: "th1", From: "coordinator", To: "worker_1"})
	ok(t, err, "new thread th1")
}

func testEntries(t *testing.T, s workspace.Store, _ Hooks) {
	withThread(t, s)
	for _, sc := range scopes() {
		t.Run(string(sc.Kind), func(t *testing.T) {
			for _, k := range []string{"k_b", "k_a", "k_c", "'); DROP TABLE entries; --"} {
				r, err := s.StoreEntry(bg, sc, workspace.StoreRequest{Key: k, Description: "about " + k, Value: json.RawMessage(`{"n": 1, "k": ` + strconv.Quote(k) + `}`), Agent: "worker_1"})
				ok(t, err, "store "+k)
				if r.Entry.Version != 1 || r.Entry.Key != k || r.Entry.StoredBy != "worker_1" {
					t.Fatalf("stored %+v", r.Entry)
				}
			}
			e, err := s.GetEntry(bg, sc, "'); DROP TABLE entries; --")
			ok(t, err, "get the key that looks like SQL")
			var v struct {
				N int
				K string
			}
			if json.Unmarshal(e.Value, &v) != nil || v.N != 1 || v.K != "'); DROP TABLE entries; --" {
				t.Fatalf("value read back %s", e.Value)
			}
			if e.ShortDescription != "about '); DROP TABLE entries; --" || e.CreatedAt.IsZero() {
				t.Fatalf("entry read back %+v", e)
			}
			man, err := s.ListEntries(bg, sc)
			ok(t, err, "list")
			var keys []string
			for _, m := range man {
				keys = append(keys, m.Key)
				if m.Version != 1 || m.Size <= 0 || m.StoredBy != "worker_1" {
					t.Fatalf("manifest item %+v", m)
				}
			}
			if !sort.StringsAreSorted(keys) || len(keys) != 4 {
				t.Fatalf("manifest keys %q: want the 4 keys, sorted", keys)
			}
			// Replace keeps created_at and bumps the version.
			r, err := s.StoreEntry(bg, sc, workspace.StoreRequest{Key: "k_a", Description: "again", Value: json.RawMessage(`2`), Agent: "worker_2"})
			ok(t, err, "replace")
			if r.Entry.Version != 2 || !r.Entry.CreatedAt.Equal(e.CreatedAt) && r.Entry.CreatedAt.After(r.Entry.UpdatedAt) {
				t.Fatalf("replaced %+v", r.Entry)
			}
			desc := "updated"
			r, err = s.UpdateEntry(bg, sc, workspace.UpdateRequest{Key: "k_a", Description: &desc, Agent: "worker_1", IfVersion: 2})
			ok(t, err, "update with the current version")
			if r.Entry.Version != 3 || r.Entry.ShortDescription != desc || string(r.Entry.Value) != "2" {
				t.Fatalf("updated %+v", r.Entry)
			}
			_, err = s.UpdateEntry(bg, sc, workspace.UpdateRequest{Key: "k_a", Value: json.RawMessage(`3`), Agent: "worker_1", IfVersion: 2})
			is(t, err, workspace.ErrConflict, "update with a stale version")
			if e, _ := s.GetEntry(bg, sc, "k_a"); e.Version != 3 || string(e.Value) != "2" {
				t.Fatalf("a refused update changed the entry: %+v", e)
			}
			r, err = s.UpdateEntry(bg, sc, workspace.UpdateRequest{Key: "k_a", Value: json.RawMessage(`[1, 2]`), Agent: "worker_1"})
			ok(t, err, "update without a version check")
			if r.Entry.Version != 4 {
				t.Fatalf("version after update %d, want 4", r.Entry.Version)
			}
			ok(t, s.DeleteEntry(bg, sc, workspace.DeleteRequest{Key: "k_b", Agent: "worker_1"}), "delete")
			_, err = s.GetEntry(bg, sc, "k_b")
			is(t, err, workspace.ErrNotFound, "get a deleted key")
			is(t, s.DeleteEntry(bg, sc, workspace.DeleteRequest{Key: "k_b", Agent: "worker_1"}), workspace.ErrNotFound, "delete a deleted key")
			_, err = s.UpdateEntry(bg, sc, workspace.UpdateRequest{Key: "k_b", Value: json.RawMessage(`1`), Agent: "worker_1"})
			is(t, err, workspace.ErrNotFound, "update a missing key")
			man, err = s.ListEntries(bg, sc)
			ok(t, err, "list after delete")
			if len(man) != 3 {
				t.Fatalf("manifest after delete has %d keys, want 3", len(man))
			}
		})
	}
	// Scopes are apart: the global k_a is not the agent's.
	g, err := s.GetEntry(bg, workspace.Scope{Kind: workspace.ScopeGlobal}, "k_c")
	ok(t, err, "get global k_c")
	_ = s.DeleteEntry(bg, workspace.Scope{Kind: workspace.ScopeAgent, Agent: "worker_1"}, workspace.DeleteRequest{Key: "k_c", Agent: "x"})
	if g2, err := s.GetEntry(bg, workspace.Scope{Kind: workspace.ScopeGlobal}, "k_c"); err != nil || g2.Version != g.Version {
		t.Fatalf("deleting an agent key touched the global one: %v %+v", err, g2)
	}
	other := workspace.Scope{Kind: workspace.ScopeAgent, Agent: "worker_2"}
	man, err := s.ListEntries(bg, other)
	ok(t, err, "list an empty scope")
	if len(man) != 0 {
		t.Fatalf("another agent's scope lists %+v", man)
	}
}

func testEntryErrors(t *testing.T, s workspace.Store, _ Hooks) {
	withThread(t, s)
	sc := workspace.Scope{Kind: workspace.ScopeThread, TaskID: "t1"}
	huge := make([]byte, s.Settings().WithDefaults().Limits.ValueMaxBytes+10)
	for i := range huge {
		huge[i] = 'a'
	}
	huge[0], huge[len(huge)-1] = '"', '"'
	deep := []byte(`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[`)
	for i := 0; i < 129; i++ {
		deep = append(deep, ']')
	}
	for _, c := range []struct {
		name string
		req  workspace.StoreRequest
	}{
		{"control character in key", workspace.StoreRequest{Key: "a\nb", Description: "d", Value: json.RawMessage(`1`), Agent: "a"}},
		{"key too long", workspace.StoreRequest{Key: strings.Repeat("k", workspace.MaxKeyBytes+1), Description: "d", Value: json.RawMessage(`1`), Agent: "a"}},
		{"key not UTF-8", workspace.StoreRequest{Key: "k\xff", Description: "d", Value: json.RawMessage(`1`), Agent: "a"}},
		{"empty key", workspace.StoreRequest{Key: "", Description: "d", Value: json.RawMessage(`1`), Agent: "a"}},
		{"not JSON", workspace.StoreRequest{Key: "k", Description: "d", Value: json.RawMessage(`{"a":`), Agent: "a"}},
		{"too large", workspace.StoreRequest{Key: "k", Description: "d", Value: huge, Agent: "a"}},
		{"too deep", workspace.StoreRequest{Key: "k", Description: "d", Value: deep, Agent: "a"}},
	} {
		_, err := s.StoreEntry(bg, sc, c.req)
		is(t, err, workspace.ErrInvalid, "store with "+c.name)
	}
	man, err := s.ListEntries(bg, sc)
	ok(t, err, "list")
	if len(man) != 0 {
		t.Fatalf("refused stores left %+v", man)
	}
	_, err = s.GetEntry(bg, sc, "k")
	is(t, err, workspace.ErrNotFound, "get a missing key")
	_, err = s.GetEntry(bg, sc, "a\x00b")
	is(t, err, workspace.ErrInvalid, "get a bad key")
	// A key is a name, never a path: one that looks like a path is
	// stored and read back as itself, in its own scope only.
	_, err = s.StoreEntry(bg, sc, workspace.StoreRequest{Key: "../../config/agents.json", Description: "d", Value: json.RawMessage(`"x"`), Agent: "a"})
	ok(t, err, "store a key that looks like a path")
	e, err := s.GetEntry(bg, sc, "../../config/agents.json")
	ok(t, err, "get it")
	if e.Key != "../../config/agents.json" || string(e.Value) != `"x"` {
		t.Fatalf("read back %+v", e)
	}
	if _, err := s.LoadAgents(t.Context()); err != nil {
		t.Fatalf("a key that looks like a path broke the agent cards: %v", err)
	}
	_, err = s.GetEntry(bg, workspace.Scope{Kind: workspace.ScopeGlobal}, "../../config/agents.json")
	is(t, err, workspace.ErrNotFound, "get it from another scope")
	_, err = s.StoreEntry(bg, workspace.Scope{Kind: workspace.ScopeThread, TaskID: "t_none"}, workspace.StoreRequest{Key: "k", Description: "d", Value: json.RawMessage(`1`), Agent: "a"})
	is(t, err, workspace.ErrNotFound, "store in a missing task")
	_, err = s.StoreEntry(bg, workspace.Scope{Kind: workspace.ScopeAgent, Agent: "../x"}, workspace.StoreRequest{Key: "k", Description: "d", Value: json.RawMessage(`1`), Agent: "a"})
	is(t, err, workspace.ErrInvalid, "store in a bad agent scope")
}

// testNoLostUpdate: 8 goroutines × 50 read-modify-writes of one counter,
// each an UpdateEntry checked by version and retried on conflict.
func testNoLostUpdate(t *testing.T, s workspace.Store, _ Hooks) {
	const goroutines, rounds = 8, 50
	newTask(t, s, "t1")
	sc := workspace.Scope{Kind: workspace.ScopeThread, TaskID: "t1"}
	_, err := s.StoreEntry(bg, sc, workspace.StoreRequest{Key: "counter", Description: "a counter", Value: json.RawMessage(`0`), Agent: "a"})
	ok(t, err, "store counter")
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	var conflicts sync.Map
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			agent := "agent_" + strconv.Itoa(g)
			n := 0
			for range rounds {
				for {
					e, err := s.GetEntry(bg, sc, "counter")
					if err != nil {
						errs <- err
						return
					}
					var v int
					if err := json.Unmarshal(e.Value, &v); err != nil {
						errs <- err
						return
					}
					_, err = s.UpdateEntry(bg, sc, workspace.UpdateRequest{Key: "counter", Value: json.RawMessage(strconv.Itoa(v + 1)), Agent: agent, IfVersion: e.Version})
					if errors.Is(err, workspace.ErrConflict) {
						n++
						continue
					}
					if err != nil {
						errs <- err
						return
					}
					break
				}
			}
			conflicts.Store(g, n)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	e, err := s.GetEntry(bg, sc, "counter")
	ok(t, err, "get counter")
	if string(e.Value) != strconv.Itoa(goroutines*rounds) || e.Version != goroutines*rounds+1 {
		t.Fatalf("counter %s at version %d after %d increments: want %d at version %d (an update was lost)",
			e.Value, e.Version, goroutines*rounds, goroutines*rounds, goroutines*rounds+1)
	}
}

func testMarkers(t *testing.T, s workspace.Store, h Hooks) {
	_, err := s.WriteClaim(t.Context(), "t_none", "worker_1", "s1")
	is(t, err, workspace.ErrNotFound, "claim in a missing task")
	approved(t, s, h, "t1", "s1", "s2")
	_, err = s.WriteClaim(t.Context(), "t1", "../w", "s1")
	is(t, err, workspace.ErrInvalid, "claim as a bad agent")
	_, err = s.WriteDone(t.Context(), workspace.DoneRequest{TaskID: "t1", Agent: "worker_1", OutputFile: "outputs/s9.json"})
	if err == nil {
		t.Fatal("done naming a missing output: no error")
	}
	_, err = s.WriteDone(t.Context(), workspace.DoneRequest{TaskID: "t1", Agent: "worker_1", OutputFile: "../../etc/passwd"})
	is(t, err, workspace.ErrInvalid, "done naming a file outside the task")

	m, err := s.WriteClaim(t.Context(), "t1", "worker_1", "s1")
	ok(t, err, "claim")
	if m == "" {
		t.Fatal("claim returned no marker name")
	}
	h.Apply(t, s)
	st, err := s.ReadState(t.Context(), "t1")
	ok(t, err, "read state")
	if sub := st.Subtasks["s1"]; sub == nil || sub.Status != "in_progress" || sub.Worker != "worker_1" {
		t.Fatalf("after the claim s1 is %+v", st.Subtasks["s1"])
	}
	out, _ := json.Marshal(map[string]any{"status": "completed", "summary": "done"})
	rel, err := s.WriteOutput(t.Context(), "t1", "s1", "worker_1", out)
	ok(t, err, "write output")
	_, err = s.WriteDone(t.Context(), workspace.DoneRequest{TaskID: "t1", Agent: "worker_1", OutputFile: rel})
	ok(t, err, "done")
	h.Apply(t, s)
	st, err = s.ReadState(t.Context(), "t1")
	ok(t, err, "read state")
	if sub := st.Subtasks["s1"]; sub == nil || sub.Status != "completed" {
		t.Fatalf("after the done s1 is %+v", st.Subtasks["s1"])
	}

	recs, err := s.ReadJournal(t.Context(), "t1")
	ok(t, err, "read journal")
	// plan done, review done, claim, done.
	if len(recs) != 4 {
		t.Fatalf("journal holds %d records, want 4: %+v", len(recs), recs)
	}
	for i, r := range recs {
		if i > 0 && r.Seq <= recs[i-1].Seq {
			t.Fatalf("journal sequence not increasing: %d then %d", recs[i-1].Seq, r.Seq)
		}
	}
	if recs[2].Kind != workspace.KindClaim || recs[2].Marker.AgentID != "worker_1" || recs[3].Kind != workspace.KindDone {
		t.Fatalf("journal records 3 and 4: %+v %+v", recs[2], recs[3])
	}
	if st.JournalSeq != recs[3].Seq {
		t.Fatalf("state at journal_seq %d, journal ends at %d", st.JournalSeq, recs[3].Seq)
	}
	list, err := s.ListTasks(t.Context())
	ok(t, err, "list tasks")
	if len(list) != 1 || list[0].State == nil || list[0].State.Status != "executing" {
		t.Fatalf("list tasks = %+v", list)
	}
	recs, err = s.ReadJournal(t.Context(), "t_none")
	if err == nil && len(recs) != 0 {
		t.Fatalf("a missing task has a journal: %+v", recs)
	}
}

// testFirstClaimWins: eight agents claim one subtask at once; once the
// claims are applied exactly one holds it, and it is the first journaled.
func testFirstClaimWins(t *testing.T, s workspace.Store, h Hooks) {
	approved(t, s, h, "t1", "s1")
	const agents = 8
	var wg sync.WaitGroup
	errs := make(chan error, agents)
	for i := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.WriteClaim(t.Context(), "t1", "worker_"+strconv.Itoa(i), "s1"); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	h.Apply(t, s)
	st, err := s.ReadState(t.Context(), "t1")
	ok(t, err, "read state")
	sub := st.Subtasks["s1"]
	if sub == nil || sub.Status != "in_progress" || sub.Worker == "" {
		t.Fatalf("s1 after %d claims: %+v", agents, sub)
	}
	recs, err := s.ReadJournal(t.Context(), "t1")
	ok(t, err, "read journal")
	var claims []workspace.JournalRecord
	for _, r := range recs {
		if r.Kind == workspace.KindClaim {
			claims = append(claims, r)
		}
	}
	if len(claims) != agents {
		t.Fatalf("journal holds %d claims, want %d (each applied once)", len(claims), agents)
	}
	if claims[0].Marker.AgentID != sub.Worker {
		t.Fatalf("s1 went to %s, but the first claim journaled is %s's", sub.Worker, claims[0].Marker.AgentID)
	}
	busy := 0
	for name, w := range st.Workers {
		if w.Status == "busy" {
			busy++
			if name != sub.Worker {
				t.Fatalf("worker %s is busy but %s won", name, sub.Worker)
			}
		}
	}
	if busy != 1 {
		t.Fatalf("%d workers busy after one subtask was claimed", busy)
	}
	// Applying again changes nothing: each marker is applied once.
	h.Apply(t, s)
	again, err := s.ReadJournal(t.Context(), "t1")
	ok(t, err, "read journal again")
	st2, _ := s.ReadState(t.Context(), "t1")
	if len(again) != len(recs) || st2.JournalSeq != st.JournalSeq {
		t.Fatalf("a second apply took markers again: %d → %d records, seq %d → %d", len(recs), len(again), st.JournalSeq, st2.JournalSeq)
	}
}

func testEvents(t *testing.T, s workspace.Store, _ Hooks) {
	newTask(t, s, "t1")
	newTask(t, s, "t2")
	before, _, err := s.ReadEvents(t.Context(), "t1")
	ok(t, err, "read events")
	// After every event the store wrote itself: each log is in time order.
	base := s.Now().Add(time.Hour).Truncate(time.Second)
	const n = 60
	for i := range n {
		ok(t, s.AppendEvent(t.Context(), workspace.Event{Time: base.Add(time.Duration(i) * time.Second), Name: "probe", TaskID: "t1", Args: []string{strconv.Itoa(i)}}), "append event")
	}
	batch := []workspace.Event{
		{Time: base.Add(30500 * time.Millisecond), Name: "probe", TaskID: "t2", Args: []string{"b0"}, Attrs: map[string]string{"k": "v w"}},
		{Time: base.Add(90 * time.Second), Name: "probe", TaskID: "t2", Args: []string{"b1"}},
	}
	ok(t, s.AppendEvents(t.Context(), "t2", batch), "append events")
	evs, bad, err := s.ReadEvents(t.Context(), "t1")
	ok(t, err, "read events")
	if len(bad) != 0 {
		t.Fatalf("bad events: %v", bad)
	}
	evs = evs[len(before):]
	if len(evs) != n {
		t.Fatalf("read %d events, want %d", len(evs), n)
	}
	for i, e := range evs {
		if e.Name != "probe" || len(e.Args) != 1 || e.Args[0] != strconv.Itoa(i) || !e.Time.Equal(base.Add(time.Duration(i)*time.Second)) {
			t.Fatalf("event %d = %+v: events must come back in append order", i, e)
		}
	}
	e2, _, err := s.ReadEvents(t.Context(), "t2")
	ok(t, err, "read events of t2")
	last := e2[len(e2)-1]
	if last.Args[0] != "b1" || e2[len(e2)-2].Attrs["k"] != "v w" {
		t.Fatalf("t2 events end with %+v", e2[len(e2)-2:])
	}
	var merged []workspace.Event
	_, err = s.MergeEvents(bg, []string{"t1", "t2"}, func(e workspace.Event) error {
		if e.Name == "probe" {
			merged = append(merged, e)
		}
		return nil
	})
	ok(t, err, "merge events")
	if len(merged) != n+2 {
		t.Fatalf("merged %d probe events, want %d", len(merged), n+2)
	}
	for i := 1; i < len(merged); i++ {
		if merged[i].Time.Before(merged[i-1].Time) {
			t.Fatalf("merged events out of time order at %d: %v then %v", i, merged[i-1].Time, merged[i].Time)
		}
	}
	if merged[31].Args[0] != "b0" {
		t.Fatalf("event 31 of the merge is %+v, want t2's b0 (between t1's 30 and 31)", merged[31])
	}
	_, _, err = s.ReadEvents(t.Context(), "t_none")
	is(t, err, workspace.ErrNotFound, "read the events of a missing task")
	err = s.AppendEvent(t.Context(), workspace.Event{Time: base, Name: "probe", TaskID: "../x"})
	is(t, err, workspace.ErrInvalid, "append an event of a bad task id")
}

func testFollowEvents(t *testing.T, s workspace.Store, _ Hooks) {
	newTask(t, s, "t1")
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	got := make(chan workspace.Event, 16)
	done := make(chan error, 1)
	go func() {
		done <- s.FollowEvents(ctx, "t1", false, 10*time.Millisecond, func(e workspace.Event) {
			if e.Name == "probe" {
				// Once the test has its three and cancels, the rest
				// may not fit in got: the follower must not block on
				// them, or it never returns.
				select {
				case got <- e:
				case <-ctx.Done():
				}
			}
		})
	}()
	// Append until the follower has seen one: it may start after the
	// first append, and a follower from the end does not replay.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	seen := map[string]bool{}
	var order []int
	for i := 0; len(order) < 3; {
		select {
		case e := <-got:
			if seen[e.Args[0]] {
				t.Fatalf("event %s delivered twice", e.Args[0])
			}
			seen[e.Args[0]] = true
			n, _ := strconv.Atoi(e.Args[0])
			order = append(order, n)
		case <-tick.C:
			ok(t, s.AppendEvent(ctx, workspace.Event{Time: s.Now(), Name: "probe", TaskID: "t1", Args: []string{strconv.Itoa(i)}}), "append")
			i++
		case <-time.After(30 * time.Second):
			t.Fatal("no event followed within 30s")
		}
	}
	if !sort.IntsAreSorted(order) {
		t.Fatalf("followed events out of order: %v", order)
	}
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("follow ended with %v", err)
	}
}

func testFriction(t *testing.T, s workspace.Store, _ Hooks) {
	newTask(t, s, "t1")
	log := friction.Open(s, "tester")
	e, isNew, err := log.Add(bg, friction.Entry{Type: friction.Types[0], Description: "the plan bounced", AffectedTasks: []string{"t1"}, Pattern: "bounce"})
	ok(t, err, "add friction")
	if !isNew || e.ID == "" || e.Occurrences != 1 || e.Status != friction.StatusPending {
		t.Fatalf("added %+v new %v", e, isNew)
	}
	again, isNew, err := log.Add(bg, friction.Entry{Type: friction.Types[0], Description: "the plan bounced again", AffectedTasks: []string{"t1"}, Pattern: "BOUNCE"})
	ok(t, err, "add the same friction")
	if isNew || again.ID != e.ID || again.Occurrences != 2 {
		t.Fatalf("a repeat made %+v new %v, want occurrences 2 on %s", again, isNew, e.ID)
	}
	got, err := log.Get(t.Context(), e.ID)
	ok(t, err, "get friction")
	if got.Occurrences != 2 {
		t.Fatalf("get %+v", got)
	}
	res, err := log.Resolve(bg, e.ID, "applied")
	ok(t, err, "resolve")
	if res.Status != "applied" {
		t.Fatalf("resolved %+v", res)
	}
	list, err := log.List(t.Context(), friction.Filter{Status: "applied"})
	ok(t, err, "list")
	if len(list) != 1 || list[0].ID != e.ID {
		t.Fatalf("list applied = %+v", list)
	}
	_, err = log.Get(t.Context(), "friction_999")
	if !errors.Is(err, friction.ErrNotFound) {
		t.Fatalf("get a missing entry: %v, want friction.ErrNotFound", err)
	}
	if _, err := log.Resolve(bg, e.ID, "bogus"); err == nil {
		t.Fatal("resolve with an unknown status: no error")
	}
	// Concurrent adds under the log's lock lose nothing.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, err := friction.Open(s, "a"+strconv.Itoa(i)).Add(bg, friction.Entry{Type: friction.Types[1], Description: "d", Pattern: "same"})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	list, err = log.List(t.Context(), friction.Filter{Type: friction.Types[1]})
	ok(t, err, "list")
	if len(list) != 1 || list[0].Occurrences != 8 {
		t.Fatalf("8 concurrent adds of one pattern gave %+v", list)
	}
	n, err := log.AnonymizeTasks(bg, []string{"t1"})
	ok(t, err, "anonymize")
	if n != 1 {
		t.Fatalf("anonymised %d entries, want 1", n)
	}
	if got, _ := log.Get(t.Context(), e.ID); slices.Contains(got.AffectedTasks, "t1") {
		t.Fatalf("t1 still named after anonymising: %+v", got)
	}
	s.NoteFriction(t.Context(), friction.Recorded(e, true), []string{"t1", "t_none"})
	evs, _, err := s.ReadEvents(t.Context(), "t1")
	ok(t, err, "read events")
	if len(evs) == 0 || evs[len(evs)-1].Name != "friction_recorded" || evs[len(evs)-1].Args[0] != e.ID {
		t.Fatalf("no friction_recorded event for %s: %+v", e.ID, evs)
	}
	if _, _, err := s.ReadEvents(t.Context(), "t_none"); !errors.Is(err, workspace.ErrNotFound) {
		t.Fatalf("noting friction on a missing task made it: %v", err)
	}
	if cfg := friction.ConfigOf(s.Settings().Friction); cfg.RevisionLimit <= 0 {
		t.Fatalf("friction config %+v", cfg)
	}
}

func testLocks(t *testing.T, s workspace.Store, _ Hooks) {
	newTask(t, s, "t1")
	l, err := s.LockTaskNamed(bg, "t1", "deploy", "agent_a")
	ok(t, err, "lock")
	short, cancel := context.WithTimeout(bg, 200*time.Millisecond)
	_, err = s.LockTaskNamed(short, "t1", "deploy", "agent_b")
	cancel()
	if !errors.Is(err, workspace.ErrLocked) && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second holder of a held lock: %v, want ErrLocked or the deadline", err)
	}
	other, err := s.LockTaskNamed(bg, "t1", "other", "agent_b")
	ok(t, err, "another name is another lock")
	infos, err := s.Locks(bg)
	ok(t, err, "locks")
	var found bool
	for _, li := range infos {
		if li.TaskID == "t1" && li.Lock == "deploy" {
			found = true
			if !li.Held || li.Holder == nil || li.Holder.Agent != "agent_a" {
				t.Fatalf("lock t1/deploy listed as %+v (holder %+v), want held by agent_a", li, li.Holder)
			}
		}
	}
	if !found {
		t.Fatalf("lock t1/deploy not listed in %+v", infos)
	}
	ok(t, l.Release(), "release")
	ok(t, other.Release(), "release other")
	l2, err := s.LockTaskNamed(bg, "t1", "deploy", "agent_b")
	ok(t, err, "lock after release")
	infos, err = s.Locks(bg)
	ok(t, err, "locks")
	for _, li := range infos {
		if li.TaskID == "t1" && li.Lock == "other" && li.Held {
			t.Fatalf("released lock still held: %+v", li)
		}
	}
	ok(t, l2.Release(), "release")
	whole, err := s.LockTaskNamed(bg, "t1", "", "agent_c")
	ok(t, err, "the whole task's lock")
	ok(t, whole.Release(), "release the task lock")

	_, err = s.LockTaskNamed(bg, "t_none", "deploy", "a")
	is(t, err, workspace.ErrNotFound, "lock in a missing task")
	_, err = s.LockTaskNamed(bg, "t1", "../x", "a")
	is(t, err, workspace.ErrInvalid, "lock with a bad name")
}

func testBackups(t *testing.T, s workspace.Store, h Hooks) {
	approved(t, s, h, "t1", "s1")
	_, err := s.WriteClaim(t.Context(), "t1", "worker_1", "s1")
	ok(t, err, "claim")
	h.Apply(t, s)
	list, err := s.ListBackups(t.Context(), "t1")
	ok(t, err, "list backups")
	if len(list) == 0 {
		t.Fatal("no backups after three state writes")
	}
	for i := 1; i < len(list); i++ {
		if list[i].Time.After(list[i-1].Time) {
			t.Fatalf("backups not newest first: %v then %v", list[i-1].Time, list[i].Time)
		}
	}
	data, err := s.ReadBackup(t.Context(), "t1", list[0].Name)
	ok(t, err, "read backup")
	var prev workspace.State
	if err := json.Unmarshal(data, &prev); err != nil || prev.TaskID != "t1" {
		t.Fatalf("backup %s = %s", list[0].Name, data)
	}
	cur, err := s.ReadState(t.Context(), "t1")
	ok(t, err, "read state")
	if prev.JournalSeq >= cur.JournalSeq {
		t.Fatalf("newest backup at journal_seq %d, state at %d: a backup keeps an earlier state", prev.JournalSeq, cur.JournalSeq)
	}
	validState := func(b []byte) error {
		var st workspace.State
		if err := json.Unmarshal(b, &st); err != nil {
			return err
		}
		if st.TaskID != "t1" {
			return errors.New("another task's state")
		}
		return nil
	}
	name, err := s.RestoreBackup(bg, "t1", list[0].Name, validState)
	ok(t, err, "restore")
	if name != list[0].Name {
		t.Fatalf("restored %q, asked for %q", name, list[0].Name)
	}
	back, err := s.ReadState(t.Context(), "t1")
	ok(t, err, "read restored state")
	if back.JournalSeq != prev.JournalSeq {
		t.Fatalf("restored state at journal_seq %d, want the backup's %d", back.JournalSeq, prev.JournalSeq)
	}
	// The restored state is behind the journal (it predates worker_1's
	// claim). The next commit brings it forward first: the claim is
	// applied again, so a second claim of s1 loses to it, and no record
	// is skipped or applied twice.
	_, err = s.WriteClaim(t.Context(), "t1", "worker_2", "s1")
	ok(t, err, "claim after the restore")
	h.Apply(t, s)
	fwd, err := s.ReadState(t.Context(), "t1")
	ok(t, err, "read state after a commit over the restored one")
	if fwd.JournalSeq != cur.JournalSeq+1 {
		t.Fatalf("after a commit over a restored state: journal_seq %d, want %d (the records past the backup, then the new one)", fwd.JournalSeq, cur.JournalSeq+1)
	}
	if sub := fwd.Subtasks["s1"]; sub == nil || sub.Worker != "worker_1" {
		t.Fatalf("after a commit over a restored state s1 is %+v, want worker_1's claim from the journal to hold", sub)
	}
	after, err := s.ListBackups(t.Context(), "t1")
	ok(t, err, "list backups")
	kept := false
	for _, b := range after {
		if d, err := s.ReadBackup(t.Context(), "t1", b.Name); err == nil {
			var st workspace.State
			if json.Unmarshal(d, &st) == nil && st.JournalSeq == cur.JournalSeq {
				kept = true
			}
		}
	}
	if !kept {
		t.Fatal("the state a restore replaced was not kept as a backup")
	}
	name, err = s.RestoreBackup(bg, "t1", "", validState)
	ok(t, err, "restore the newest valid")
	if name == "" {
		t.Fatal("restore of the newest valid backup named none")
	}
	_, err = s.RestoreBackup(bg, "t1", list[0].Name, func([]byte) error { return errors.New("no") })
	is(t, err, workspace.ErrInvalid, "restore a backup the check refuses")
	_, err = s.ReadBackup(t.Context(), "t1", "state_nope.json")
	is(t, err, workspace.ErrNotFound, "read a missing backup")
	_, err = s.ListBackups(t.Context(), "t_none")
	is(t, err, workspace.ErrNotFound, "list the backups of a missing task")
}

func testRetention(t *testing.T, s workspace.Store, h Hooks) {
	approved(t, s, h, "t_active", "s1")
	newTask(t, s, "t_new")
	_, err := s.Prune(bg, workspace.PruneRequest{Policy: retention.Policy{FullDays: 1, SummaryDays: 0}})
	if !errors.Is(err, retention.ErrInvalidPolicy) {
		t.Fatalf("prune with summary_days < full_days: %v, want ErrInvalidPolicy", err)
	}
	var seen []string
	var mu sync.Mutex
	rep, err := s.Prune(bg, workspace.PruneRequest{Policy: retention.Policy{FullDays: 0, SummaryDays: 1}, Agent: "cleanup",
		OnProgress: func(d retention.Decision) { mu.Lock(); seen = append(seen, d.TaskID); mu.Unlock() }})
	ok(t, err, "prune")
	if len(rep.Removed) != 0 || len(rep.Summarized) != 0 || len(rep.Errors) != 0 {
		t.Fatalf("prune touched unfinished tasks: %+v", rep)
	}
	for _, id := range []string{"t_active", "t_new"} {
		if _, err := s.GetTask(t.Context(), id); err != nil {
			t.Fatalf("prune lost unfinished task %s: %v", id, err)
		}
	}
	if !slices.Contains(seen, "t_active") {
		t.Fatalf("progress never reported t_active: %v", seen)
	}
}

const skillGrids = "---\ndescription: Reading grids\ntags: [grids, arc]\nmodes: [analysis]\n---\n# Grids\n\nRead row by row.\n"

func testSkills(t *testing.T, s workspace.Store, _ Hooks) {
	base, _, err := s.ListSkills(t.Context())
	ok(t, err, "list skills")
	for _, name := range []string{"zeta", "grids"} {
		sk, err := s.AddSkill(bg, workspace.AddSkillRequest{Name: name, Data: []byte(skillGrids), Agent: "a"})
		ok(t, err, "add skill "+name)
		if sk.Name != name || sk.Description != "Reading grids" {
			t.Fatalf("added %+v", sk)
		}
	}
	sk, err := s.GetSkill(t.Context(), "grids")
	ok(t, err, "get skill")
	if sk.Body != "# Grids\n\nRead row by row.\n" || !slices.Equal(sk.Tags, []string{"grids", "arc"}) {
		t.Fatalf("skill read back %+v", sk)
	}
	list, refused, err := s.ListSkills(t.Context())
	ok(t, err, "list skills")
	if len(list) != len(base)+2 || len(refused) != 0 {
		t.Fatalf("skills %+v refused %+v", list, refused)
	}
	for i := 1; i < len(list); i++ {
		if list[i-1].Name >= list[i].Name {
			t.Fatalf("skills not sorted by name: %s then %s", list[i-1].Name, list[i].Name)
		}
	}
	_, err = s.AddSkill(bg, workspace.AddSkillRequest{Name: "grids", Data: []byte(skillGrids), Agent: "a"})
	is(t, err, workspace.ErrConflict, "add an existing skill")
	_, err = s.AddSkill(bg, workspace.AddSkillRequest{Name: "grids", Data: []byte(replacedSkill(skillGrids)), Replace: true, Agent: "a"})
	ok(t, err, "replace a skill")
	if sk, _ := s.GetSkill(t.Context(), "grids"); sk.Description != "Reading grids well" {
		t.Fatalf("replaced skill reads %+v", sk)
	}
	_, err = s.AddSkill(bg, workspace.AddSkillRequest{Name: "broken", Data: []byte("no front matter"), Agent: "a"})
	is(t, err, workspace.ErrInvalid, "add a skill without front matter")
	_, err = s.AddSkill(bg, workspace.AddSkillRequest{Name: "../x", Data: []byte(skillGrids), Agent: "a"})
	is(t, err, workspace.ErrInvalid, "add a skill with a bad name")
	ok(t, s.RemoveSkill(bg, "zeta", "a"), "remove skill")
	_, err = s.GetSkill(t.Context(), "zeta")
	is(t, err, workspace.ErrNotFound, "get a removed skill")
	is(t, s.RemoveSkill(bg, "zeta", "a"), workspace.ErrNotFound, "remove a removed skill")
}

func replacedSkill(s string) string {
	return "---\ndescription: Reading grids well\n" + s[len("---\ndescription: Reading grids\n"):]
}

func testTaskFiles(t *testing.T, s workspace.Store, _ Hooks) {
	newTask(t, s, "t1")
	out, _ := json.Marshal(map[string]any{"status": "completed", "summary": "ok"})
	rel, err := s.WriteOutput(t.Context(), "t1", "s1", "w", out)
	ok(t, err, "write output")
	data, err := s.ReadTaskFile(t.Context(), "t1", rel, 1<<20)
	ok(t, err, "read task file")
	var o workspace.Output
	if json.Unmarshal(data, &o) != nil || o.Summary != "ok" {
		t.Fatalf("task file %s = %s", rel, data)
	}
	_, err = s.ReadTaskFile(t.Context(), "t1", rel, 4)
	is(t, err, workspace.ErrUnsafe, "read a task file over the limit")
	_, err = s.ReadTaskFile(t.Context(), "t1", "../../config/agents.json", 1<<20)
	is(t, err, workspace.ErrInvalid, "read a file outside the task")
	_, err = s.ReadTaskFile(t.Context(), "t1", "/etc/passwd", 1<<20)
	is(t, err, workspace.ErrInvalid, "read an absolute path")
	_, err = s.ReadTaskFile(t.Context(), "t1", "notes/none.md", 1<<20)
	is(t, err, workspace.ErrNotFound, "read a missing task file")
	_, err = s.ReadTaskFile(t.Context(), "t_none", rel, 1<<20)
	is(t, err, workspace.ErrNotFound, "read a file of a missing task")
}
