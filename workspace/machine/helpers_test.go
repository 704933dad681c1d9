package machine

import (
	"bytes"
	"encoding/json"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/vocab"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/statecheck"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// t0 is the time every test journal starts from; record n is taken n
// minutes later.
var t0 = time.Date(2024, 1, 15, 10, 0, 0, 0, time.UTC)

// journal builds the records a daemon would have taken, numbered and
// timed in order.
type journal struct {
	recs []workspace.JournalRecord
}

func (j *journal) add(rec workspace.JournalRecord) *journal {
	seq := int64(len(j.recs) + 1)
	rec.Seq = seq
	rec.TakenAt = t0.Add(time.Duration(seq) * time.Minute)
	if rec.File == "" {
		rec.File = "." + rec.Kind + "." + rec.Marker.AgentID
	}
	j.recs = append(j.recs, rec)
	return j
}

func (j *journal) claim(agent, subtask string) *journal {
	return j.add(workspace.JournalRecord{Kind: workspace.KindClaim, Marker: workspace.Marker{AgentID: agent, SubtaskID: subtask}})
}

func (j *journal) done(agent, subtask string) *journal {
	return j.marker(workspace.Marker{AgentID: agent, SubtaskID: subtask, OutputFile: "outputs/" + subtask + ".json", Status: DoneCompleted})
}

func (j *journal) failed(agent, subtask, msg string) *journal {
	return j.marker(workspace.Marker{AgentID: agent, SubtaskID: subtask, OutputFile: "outputs/" + subtask + ".json", Status: DoneFailed, Error: msg})
}

func (j *journal) marker(m workspace.Marker) *journal {
	return j.add(workspace.JournalRecord{Kind: workspace.KindDone, Marker: m})
}

func (j *journal) propose(agent string, p *workspace.Plan) *journal {
	return j.add(workspace.JournalRecord{Kind: workspace.KindDone, Marker: workspace.Marker{AgentID: agent, OutputFile: "plan.json"}, Plan: p})
}

func (j *journal) review(agent string, r workspace.Review) *journal {
	return j.add(workspace.JournalRecord{Kind: workspace.KindDone, Marker: workspace.Marker{AgentID: agent, OutputFile: "reviews/" + r.ID + ".json"}, Review: &r})
}

func planReview(id, verdict string, problems ...string) workspace.Review {
	return workspace.Review{ID: id, Type: ReviewPlan, Reviewer: "reviewer", Verdict: verdict, Issues: issueList(problems)}
}

func checkpointReview(id, target, verdict string, problems ...string) workspace.Review {
	return workspace.Review{ID: id, Type: ReviewCheckpoint, Target: target, Reviewer: "reviewer", Verdict: verdict, Issues: issueList(problems)}
}

func issueList(problems []string) []workspace.ReviewIssue {
	var out []workspace.ReviewIssue
	for _, p := range problems {
		out = append(out, workspace.ReviewIssue{Severity: "high", Problem: p})
	}
	return out
}

// folded is the outcome of folding a journal step by step.
type folded struct {
	state workspace.State
	plan  *workspace.Plan
	last  []workspace.Event // the events of the last record
	all   []workspace.Event
}

// fold applies the journal from Init(task) with Step, checking at every
// step that the input is left untouched and that the invariants hold.
func fold(t testing.TB, task workspace.Task, recs []workspace.JournalRecord) folded {
	t.Helper()
	f := folded{state: Init(task)}
	inPlace := NewFold(f.state, nil)
	for _, rec := range recs {
		next, plan, events := stepChecked(t, f.state, f.plan, rec)
		checkInvariants(t, f.state, next, rec, events)
		checkFold(t, inPlace, f.state, next, f.plan, rec)
		f.state, f.plan, f.last = next, plan, events
		f.all = append(f.all, events...)
	}
	return f
}

// checkFold folds rec in place into fd, which holds prev, and fails the
// test unless it reaches next, the state Step reached, with every entry
// that differs from prev's noted as changed.
func checkFold(t testing.TB, fd *Fold, prev, next workspace.State, plan *workspace.Plan, rec workspace.JournalRecord) {
	t.Helper()
	if _, err := fd.Continue(func(int) (*workspace.Plan, error) { return plan, nil }, []workspace.JournalRecord{rec}); err != nil {
		t.Fatalf("record %d: Fold: %v", rec.Seq, err)
	}
	if got, want := snapshot(t, fd.State()), snapshot(t, next); !bytes.Equal(got, want) {
		t.Fatalf("record %d: Fold reached\n%s\nStep reached\n%s", rec.Seq, got, want)
	}
	ch := fd.Changed()
	if ch.All {
		return
	}
	d := statecheck.Diff(prev, next)
	for _, m := range []struct {
		name    string
		diff    []string
		changed map[string]struct{}
	}{{"subtask", slices.Collect(maps.Keys(d.Subtasks)), ch.Subtasks}, {"checkpoint", slices.Collect(maps.Keys(d.Checkpoints)), ch.Checkpoints},
		{"worker", slices.Collect(maps.Keys(d.Workers)), ch.Workers}} {
		for _, id := range m.diff {
			if _, ok := m.changed[id]; !ok {
				t.Fatalf("record %d: %s %s changed, not noted by the fold (noted: %v)", rec.Seq, m.name, id, m.changed)
			}
		}
	}
}

// stepChecked runs Step and fails the test if it changed its input, or if
// its output shares memory with its input (scribbling over the output must
// leave the input as it was).
func stepChecked(t testing.TB, st workspace.State, plan *workspace.Plan, rec workspace.JournalRecord) (workspace.State, *workspace.Plan, []workspace.Event) {
	t.Helper()
	before := snapshot(t, st, plan, rec)
	next, nextPlan, events := checkedStep(t, st, plan, rec)
	if after := snapshot(t, st, plan, rec); !bytes.Equal(before, after) {
		t.Fatalf("record %d: Step changed its input:\nbefore %s\nafter  %s", rec.Seq, before, after)
	}
	if rec.Seq > st.JournalSeq {
		scribble(&next)
		if after := snapshot(t, st, plan, rec); !bytes.Equal(before, after) {
			t.Fatalf("record %d: Step's result shares memory with its input", rec.Seq)
		}
		next, nextPlan, events = checkedStep(t, st, plan, rec)
	}
	return next, nextPlan, events
}

// scribble overwrites everything reachable from a state.
func scribble(st *workspace.State) {
	junk := time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC)
	if st.StartedAt != nil {
		*st.StartedAt = junk
	}
	if st.CompletedAt != nil {
		*st.CompletedAt = junk
	}
	for _, s := range st.Subtasks {
		s.Status = "junk"
		for i := range s.BlockedBy {
			s.BlockedBy[i] = "junk"
		}
		if s.StartedAt != nil {
			*s.StartedAt = junk
		}
		if s.CompletedAt != nil {
			*s.CompletedAt = junk
		}
	}
	st.Subtasks["junk"] = &workspace.SubtaskState{}
	for _, c := range st.Checkpoints {
		c.Status = "junk"
		if c.ReachedAt != nil {
			*c.ReachedAt = junk
		}
		if c.ReviewedAt != nil {
			*c.ReviewedAt = junk
		}
	}
	st.Checkpoints["junk"] = &workspace.CheckpointState{}
	for _, w := range st.Workers {
		w.Status = "junk"
	}
	st.Workers["junk"] = &workspace.WorkerState{}
	for i := range st.Errors {
		st.Errors[i].Message = "junk"
	}
	// Appending in place would write into the input's array if the two
	// shared one.
	st.Errors = append(st.Errors, workspace.StateError{Message: "junk"})
}

func snapshot(t testing.TB, v ...any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal snapshot: %v", err)
	}
	return b
}

// checkInvariants fails the test when a step broke a rule that must hold
// whatever the records were.
func checkInvariants(t testing.TB, prev, next workspace.State, rec workspace.JournalRecord, events []workspace.Event) {
	t.Helper()
	if next.JournalSeq < prev.JournalSeq {
		t.Fatalf("record %d: journal_seq went back from %d to %d", rec.Seq, prev.JournalSeq, next.JournalSeq)
	}
	if rec.Seq <= prev.JournalSeq {
		if len(events) != 0 || !reflect.DeepEqual(prev, next) {
			t.Fatalf("record %d at journal_seq %d: an old record changed the state or emitted %v", rec.Seq, prev.JournalSeq, events)
		}
		return
	}
	if next.JournalSeq != rec.Seq || !next.LastUpdated.Equal(rec.TakenAt) {
		t.Fatalf("record %d: journal_seq %d last_updated %v, want the record's", rec.Seq, next.JournalSeq, next.LastUpdated)
	}
	if next.Subtasks == nil || next.Checkpoints == nil || next.Workers == nil || next.Errors == nil {
		t.Fatalf("record %d: a map or the errors slice became nil", rec.Seq)
	}
	// Refusal reads back from the state exactly what the events say:
	// refused, and why, or applied.
	wantReason, wantRefused := "", false
	for _, e := range events {
		switch e.Name {
		case EventClaimRefused, EventMarkerRefused, EventOutputRejected:
			wantReason, wantRefused = e.Attrs["reason"], true
		}
	}
	if reason, refused := Refusal(next, rec); refused != wantRefused || reason != wantReason {
		t.Fatalf("record %d: Refusal = %q, %v; the events say %q, %v", rec.Seq, reason, refused, wantReason, wantRefused)
	}
	revised := map[string]bool{}
	for _, e := range events {
		if e.Name == EventCheckpointRevisionNeeded {
			revised[e.Args[0]] = true
		}
		if !e.Time.Equal(rec.TakenAt) || e.TaskID != next.TaskID {
			t.Fatalf("record %d: event %+v not stamped with the record's time and task", rec.Seq, e)
		}
	}
	// A completed subtask stays completed, except when a checkpoint
	// revision sends it back.
	for id, ps := range prev.Subtasks {
		ns := next.Subtasks[id]
		if ps.Status == SubtaskCompleted && (ns == nil || ns.Status != SubtaskCompleted) && len(revised) == 0 {
			t.Fatalf("record %d: completed subtask %s went to %v without a checkpoint revision", rec.Seq, id, ns)
		}
	}
	completed := 0
	for id, s := range next.Subtasks {
		switch s.Status {
		case SubtaskCompleted:
			completed++
		case SubtaskInProgress:
			if w := next.Workers[s.Worker]; s.Worker == "" || w == nil {
				t.Fatalf("record %d: subtask %s in progress without a known worker", rec.Seq, id)
			}
		case SubtaskBlocked:
			if len(s.BlockedBy) == 0 {
				t.Fatalf("record %d: subtask %s blocked by nothing", rec.Seq, id)
			}
		case SubtaskPending, SubtaskFailed:
		default:
			t.Fatalf("record %d: subtask %s has status %q", rec.Seq, id, s.Status)
		}
	}
	if completed > len(next.Subtasks) {
		t.Fatalf("record %d: %d completed of %d subtasks", rec.Seq, completed, len(next.Subtasks))
	}
	if next.Status == vocab.StatusCompleted && completed != len(next.Subtasks) {
		t.Fatalf("record %d: task completed with %d of %d subtasks completed", rec.Seq, completed, len(next.Subtasks))
	}
	for name, w := range next.Workers {
		if w.Status == WorkerBusy {
			s := next.Subtasks[w.CurrentTask]
			if s == nil || s.Status != SubtaskInProgress || s.Worker != name {
				t.Fatalf("record %d: worker %s busy with %q, which it does not hold", rec.Seq, name, w.CurrentTask)
			}
		} else if w.Status != WorkerAvailable || w.CurrentTask != "" {
			t.Fatalf("record %d: worker %s is %q with %q", rec.Seq, name, w.Status, w.CurrentTask)
		}
	}
	if vocab.Finished(next.Status) && next.CompletedAt == nil {
		t.Fatalf("record %d: task %s without completed_at", rec.Seq, next.Status)
	}
	if vocab.Finished(prev.Status) && (next.Status != prev.Status || len(next.Subtasks) != len(prev.Subtasks)) {
		t.Fatalf("record %d: finished task moved from %s to %s", rec.Seq, prev.Status, next.Status)
	}
	if len(next.Errors) < len(prev.Errors) {
		t.Fatalf("record %d: errors shrank", rec.Seq)
	}
}

// goldenFile is what a golden file holds.
type goldenFile struct {
	State  workspace.State   `json:"state"`
	Events []workspace.Event `json:"events"`
}

// checkGolden compares st and events, as canonical JSON, with
// testdata/<name>.golden structurally; -update rewrites the file.
func checkGolden(t *testing.T, name string, st workspace.State, events []workspace.Event) {
	t.Helper()
	if events == nil {
		events = []workspace.Event{}
	}
	got, err := atomicfile.Marshal(goldenFile{State: st, Events: events})
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatalf("update golden: %v", err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run go test -update to create it): %v", err)
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("unmarshal result: %v", err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("unmarshal %s: %v", path, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s differs from the result (go test -update rewrites it)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func eventNames(events []workspace.Event) []string {
	names := []string{}
	for _, e := range events {
		names = append(names, e.Name)
	}
	return names
}
