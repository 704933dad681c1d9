package machine

import (
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// verdictPlan has st_1 and st_2 (which depends on st_1), at most one retry
// of st_2.
var verdictPlan = &workspace.Plan{ID: "plan_t1", TaskID: "t1", Version: 1, CreatedAt: t0, Subtasks: []workspace.Subtask{
	{ID: "st_1", Description: "one"},
	{ID: "st_2", Description: "two", Dependencies: []string{"st_1"}, MaxRetries: 1},
}}

// Every kind of record gets the verdict the machine's own events give it,
// read back from the state alone.
func TestJudge(t *testing.T) {
	claim := func(agent, sub string) workspace.JournalRecord {
		return workspace.JournalRecord{Kind: workspace.KindClaim, Marker: workspace.Marker{AgentID: agent, SubtaskID: sub}}
	}
	done := func(agent, sub, status, msg string) workspace.JournalRecord {
		return workspace.JournalRecord{Kind: workspace.KindDone, Marker: workspace.Marker{AgentID: agent, SubtaskID: sub,
			OutputFile: "outputs/" + sub + ".json", Status: status, Error: msg}}
	}
	type step struct {
		rec     workspace.JournalRecord
		verdict string
		reason  string // a part of the reason
	}
	steps := []step{
		{claim("w1", "st_1"), workspace.VerdictLost, "no approved plan yet"},
		{workspace.JournalRecord{Kind: workspace.KindDone, Marker: workspace.Marker{AgentID: "planner", OutputFile: "plan.json"}, Plan: verdictPlan}, workspace.VerdictApplied, ""},
		{workspace.JournalRecord{Kind: workspace.KindDone, Marker: workspace.Marker{AgentID: "reviewer", OutputFile: "reviews/r1.json"},
			Review: &workspace.Review{ID: "r1", Type: "plan_review", Verdict: "approved"}}, workspace.VerdictApplied, ""},
		{claim("w1", "st_1"), workspace.VerdictWon, ""},
		{claim("w2", "st_1"), workspace.VerdictLost, "already taken by w1"},
		{claim("w2", "st_2"), workspace.VerdictLost, "blocked by st_1"},
		{claim("w2", "st_9"), workspace.VerdictNotFound, "unknown subtask st_9"},
		{done("w2", "st_9", "completed", ""), workspace.VerdictNotFound, "unknown subtask st_9"},
		{done("w2", "st_1", "completed", ""), workspace.VerdictRefused, "taken by w1, not w2"},
		{workspace.JournalRecord{Kind: workspace.KindDone, Marker: workspace.Marker{AgentID: "w2", SubtaskID: "st_1", OutputFile: "outputs/st_1.json"},
			Rejected: "output file outputs/st_1.json does not exist"}, workspace.VerdictRefused, "does not exist"},
		{done("w1", "st_1", "completed", ""), workspace.VerdictApplied, ""},
		{done("w1", "st_1", "completed", ""), workspace.VerdictRefused, "already completed by w1"},
		{claim("w2", "st_2"), workspace.VerdictWon, ""},
		// A failure applied leaves an error too; it is not a refusal.
		{done("w2", "st_2", "failed", "tests fail"), workspace.VerdictApplied, ""},
		{claim("w1", "st_2"), workspace.VerdictWon, ""},
		{done("w2", "st_2", "failed", "tests fail"), workspace.VerdictRefused, "taken by w1, not w2"},
		{done("w1", "st_2", "failed", ""), workspace.VerdictApplied, ""},
		{claim("w1", "st_2"), workspace.VerdictLost, "task is failed"},
		{workspace.JournalRecord{Kind: workspace.KindDone, Marker: workspace.Marker{AgentID: "human", Status: "cancelled"}}, workspace.VerdictRefused, "task is failed"},
	}
	task := workspace.Task{ID: "t1", CreatedAt: t0}
	st := Init(task)
	var plan *workspace.Plan
	for i, s := range steps {
		rec := s.rec
		rec.Seq = int64(i + 1)
		rec.TakenAt = t0.Add(time.Duration(i+1) * time.Second)
		rec.File = "." + rec.Kind + "." + rec.Marker.AgentID + ".x" + string(rune('a'+i))
		st, plan, _ = Step(st, plan, rec)
		v := Judge(st, rec, rec.File)
		if v.Verdict != s.verdict || !strings.Contains(v.Reason, s.reason) || (s.reason == "") != (v.Reason == "") {
			t.Errorf("record %d (%s %s %s): verdict %s %q, want %s %q", rec.Seq, rec.Kind, rec.Marker.AgentID, rec.Marker.SubtaskID, v.Verdict, v.Reason, s.verdict, s.reason)
		}
		if v.Seq != rec.Seq || v.Marker != rec.File || v.TaskID != "t1" || v.TaskStatus != st.Status {
			t.Errorf("record %d: verdict %+v does not name its record and task", rec.Seq, v)
		}
	}
}
