package sqlite

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/machine"
)

// TestReadVerdictReadsWhatJudgeNeeds: ReadVerdict reads only parts of the
// state (verdictState); for every kind of verdict it gives what the
// machine gives on the whole state — won, lost, refused, a subtask not in
// the plan, a reused name, keys that need quoting — and a state that is
// not JSON is ErrInvalid.
func TestReadVerdictReadsWhatJudgeNeeds(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := t.Context()
	if _, err := s.CreateTask(ctx, workspace.NewTaskRequest{ID: "t1", Description: "verdicts"}); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	st := workspace.State{TaskID: "t1", PlanID: "p", PlanVersion: 1, PlanStatus: machine.PlanApproved, Status: "executing", Phase: "executing",
		LastUpdated: at, JournalSeq: 6,
		Subtasks: map[string]*workspace.SubtaskState{
			"st_1":       {Status: "in_progress", Worker: "a1", StartedAt: &at},
			"st_2":       {Status: "failed", Error: "boom", Attempts: 2},
			`st."q"\[1]`: {Status: "in_progress", Worker: "a3"},
		},
		Checkpoints: map[string]*workspace.CheckpointState{}, Workers: map[string]*workspace.WorkerState{},
		Errors: []workspace.StateError{
			{At: at, Seq: 2, Agent: "a2", SubtaskID: "st_1", Message: "st_1 is claimed by a1"},
			{At: at, Seq: 4, Agent: "a1", SubtaskID: "st_9", Message: "no subtask st_9"},
			{At: at, Seq: 5, Agent: "a1", SubtaskID: "st_2", Message: "done refused"},
			{At: at, Seq: 5, Agent: "a1", SubtaskID: "st_2", Message: "and a second error of seq 5"},
		}}
	claim := func(seq int64, agent, sub string) workspace.JournalRecord {
		return workspace.JournalRecord{Seq: seq, TakenAt: at, Kind: workspace.KindClaim, Marker: workspace.Marker{AgentID: agent, SubtaskID: sub}}
	}
	recs := map[string]workspace.JournalRecord{
		".claim.a1.x": claim(1, "a1", "st_1"),
		".claim.a2.x": claim(2, "a2", "st_1"),
		".claim.a3.x": claim(3, "a3", `st."q"\[1]`),
		".claim.a1.y": claim(4, "a1", "st_9"),
		".done.a1.z":  {Seq: 5, TakenAt: at, Kind: workspace.KindDone, Marker: workspace.Marker{AgentID: "a1", SubtaskID: "st_2", Status: "failed", Error: "boom"}},
		".done.a4.w":  {Seq: 6, TakenAt: at, Kind: workspace.KindDone, Marker: workspace.Marker{AgentID: "a4", SubtaskID: "st_1"}, Rejected: "no output"},
	}
	doc, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	write := func(q string, args ...any) {
		t.Helper()
		if _, err := s.DB().ExecContext(ctx, q, args...); err != nil {
			t.Fatal(err)
		}
	}
	write("INSERT INTO states (task_id, journal_seq, doc, epoch) VALUES ('t1', 6, $1, 0)", string(doc))
	for name, r := range recs {
		b, _ := json.Marshal(r)
		write("INSERT INTO journal (task_id, seq, taken_at, name, record, epoch) VALUES ('t1', $1, 'x', $2, $3, 0)", r.Seq, name, string(b))
	}
	verdicts := map[string]int{}
	for name, r := range recs {
		want := machine.Judge(st, r, name)
		got, where, err := s.ReadVerdict("t1", name, 0)
		if err != nil || where != workspace.MarkerDecided || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %+v, %s, %v; the machine on the whole state: %+v", name, got, where, err, want)
		}
		verdicts[got.Verdict]++
		want = machine.JudgeReused(st, "t1", name, "", r.Seq)
		if got, _, err := s.ReadVerdict("t1", name, r.Seq); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s reused: %+v, %v; the machine: %+v", name, got, err, want)
		}
	}
	for _, v := range []string{workspace.VerdictWon, workspace.VerdictLost, workspace.VerdictNotFound, workspace.VerdictRefused} {
		if verdicts[v] == 0 {
			t.Errorf("no case gave %s: %v", v, verdicts)
		}
	}
	write("UPDATE states SET doc = '{not json' WHERE task_id = 't1'")
	if _, _, err := s.ReadVerdict("t1", ".claim.a1.x", 0); !errors.Is(err, workspace.ErrInvalid) {
		t.Errorf("a state that is not JSON: %v, want ErrInvalid", err)
	}
}
