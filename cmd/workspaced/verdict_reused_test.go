package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"
)

// reusedNameVerdict drops a claim under name, a marker name task's
// journal holds already as seq journaled (as an agent that reuses names
// does; the CLI never does), and waits for its verdict the way
// 'claim --wait --json' does, in this process: the daemon's refusal comes
// back as the verdict, refused, printed with its reason and exit 4, not
// as a marker gone missing or a wait that runs out.
func reusedNameVerdict(t *testing.T, w *ws, task, name string, journaled int64) {
	t.Helper()
	st := w.Open()
	state, err := st.ReadState(t.Context(), task)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.DropNamedMarker(t.Context(), task, workspace.KindClaim, name, workspace.Marker{AgentID: "w1", SubtaskID: "st_2"}); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	e := &env{stdout: &stdout, stderr: &stderr, root: w.Root}
	op := "claim st_2 of task " + task
	o, err := service.Await(t.Context(), st, task, name, state.JournalSeq, true, time.Minute)
	err = reportMarker(e, op, task, service.Delivery{Marker: name, After: state.JournalSeq, Outcome: o}, err, waitFlag{on: true, d: time.Minute}, true)
	code := report(&stderr, err)
	reason := fmt.Sprintf("refused: this marker name was already used (journaled as seq %d); write a new marker with a fresh name; subtask st_2 is blocked; task %s is executing", journaled, task)
	if code != exitConflict || !strings.Contains(stderr.String(), reason) || !strings.Contains(stderr.String(), "hint: run the command again: it drops a marker under a fresh name") {
		t.Fatalf("claim --wait under a reused name: exit %d, stderr:\n%s\nwant exit %d and %q", code, stderr.String(), exitConflict, reason)
	}
	v := verdictOf(t, stdout.String())
	if v.Verdict.Verdict != workspace.VerdictRefused || v.Journaled != journaled || v.Seq != 0 || v.Kind != workspace.KindClaim || v.SubtaskID != "st_2" || v.Marker != name {
		t.Fatalf("claim --wait --json under a reused name: %+v", v)
	}
}
