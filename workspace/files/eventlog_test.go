package files

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/machine"
)

// journalEvents is the events the journal of task id makes, replayed by
// the state machine from the task's first state: the events.log lines
// every commit must have written, once each and in order.
func journalEvents(t *testing.T, ws *Store, id string) []string {
	t.Helper()
	task, err := ws.GetTask(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	recs := readJournal(t, ws, id)
	plans := func(version int) (*workspace.Plan, error) {
		for _, r := range slices.Backward(recs) {
			if r.Plan != nil && r.Plan.Version == version {
				return r.Plan, nil
			}
		}
		return nil, fmt.Errorf("no plan v%d in the journal", version)
	}
	_, evs, err := machine.Continue(machine.Init(task), plans, recs)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		out = append(out, workspace.FormatEvent(e))
	}
	return out
}

// eventsOnce checks that events.log holds every event of the journal of
// task id exactly once, in order (lines of other events aside), and
// returns the lines that do not parse.
func eventsOnce(t *testing.T, ws *Store, id string) []error {
	t.Helper()
	want := journalEvents(t, ws, id)
	evs, bad, err := ws.ReadEvents(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	wanted := map[string]bool{}
	for _, l := range want {
		wanted[l] = true
	}
	var got []string
	for _, e := range evs {
		if l := workspace.FormatEvent(e); wanted[l] {
			got = append(got, l)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("events.log holds the journal's events\n%s\nwant, once each and in order:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	return bad
}

// claims drops a claim of each subtask named, each by its own worker.
func claims(t *testing.T, ws *Store, subs ...string) {
	t.Helper()
	for i, sub := range subs {
		if _, err := ws.WriteClaim(context.Background(), "t1", fmt.Sprintf("w%d", i+1), sub); err != nil {
			t.Fatal(err)
		}
	}
}

// breakEventsLog makes task t1's events.log a directory, so that an
// append fails, and returns how to mend it: the log as it was, followed by
// tail.
func breakEventsLog(t *testing.T, dir string) (mend func(tail string)) {
	t.Helper()
	log := filepath.Join(dir, "tasks", "t1", workspace.EventsFile)
	before, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(log); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(log, 0o755); err != nil {
		t.Fatal(err)
	}
	return func(tail string) {
		t.Helper()
		if err := os.Remove(log); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(log, append(before, tail...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// commitFails commits task t1 once and checks that it fails, the state
// left where it was.
func commitFails(t *testing.T, d *tester, ws *Store, seq int64, why string) {
	t.Helper()
	_, err := d.taskOf("t1").Commit(context.Background(), workspace.CommitRequest{Max: testMax})
	if err == nil || !strings.Contains(err.Error(), why) {
		t.Fatalf("commit: %v, want it to fail for %q", err, why)
	}
	if st, err := ws.ReadState(context.Background(), "t1"); err != nil || st.JournalSeq != seq {
		t.Fatalf("after the failed commit: journal_seq %d (%v), want %d", st.JournalSeq, err, seq)
	}
}

// A commit whose events cannot be appended fails and writes no state; once
// the log can be written again, the next commit appends them, and no later
// load appends them again.
func TestEventsOfFailedAppendWrittenOnce(t *testing.T) {
	t.Parallel()
	dir, ws, d := executingTask(t, 4)
	mend := breakEventsLog(t, dir)
	claims(t, ws, "st_1", "st_2", "st_3")
	commitFails(t, d, ws, 2, "append events")
	if n := len(readJournal(t, ws, "t1")); n != 5 {
		t.Fatalf("%d records, want the 3 claims journaled beside the 2 before", n)
	}
	mend("")
	process(t, d, "t1")
	st, err := ws.ReadState(context.Background(), "t1")
	if err != nil || st.JournalSeq != 5 {
		t.Fatalf("journal_seq %d (%v), want 5", st.JournalSeq, err)
	}
	eventsOnce(t, ws, "t1")
	// A load from disk by a new committer finds nothing to add.
	process(t, newDaemon(t, dir), "t1")
	eventsOnce(t, ws, "t1")
}

// A commit that appended its events but could not write the state (or
// died in between) leaves them in the log: the load that replays the
// records does not append them a second time.
func TestEventsOfFailedStateWriteNotRepeated(t *testing.T) {
	t.Parallel()
	dir, ws, d := executingTask(t, 4)
	backups := filepath.Join(dir, "tasks", "t1", "backups")
	if err := os.RemoveAll(backups); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(backups, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	claims(t, ws, "st_1", "st_2")
	commitFails(t, d, ws, 2, "backups")
	if err := os.Remove(backups); err != nil {
		t.Fatal(err)
	}
	process(t, d, "t1")
	if st, err := ws.ReadState(context.Background(), "t1"); err != nil || st.JournalSeq != 4 {
		t.Fatalf("journal_seq %d (%v), want 4", st.JournalSeq, err)
	}
	eventsOnce(t, ws, "t1")
}

// An append a full disk cut short leaves a partial last line: the events
// are appended whole after it, on a line of their own, once.
func TestEventsAfterTornLine(t *testing.T) {
	t.Parallel()
	dir, ws, d := executingTask(t, 4)
	mend := breakEventsLog(t, dir)
	claims(t, ws, "st_1", "st_2")
	commitFails(t, d, ws, 2, "append events")
	first := journalEvents(t, ws, "t1")[2] // the first claim's work_assigned
	mend(first[:len(first)/2])
	process(t, d, "t1")
	if bad := eventsOnce(t, ws, "t1"); len(bad) != 1 {
		t.Errorf("%d lines that do not parse, want the torn one alone: %v", len(bad), bad)
	}
}

// A marker dropped under a name the journal already holds is not
// journaled again: it is removed, and a marker_refused event says why,
// whether the committer noted the name as it took it or read it from the
// journal.
func TestMarkerNameJournaledOnce(t *testing.T) {
	t.Parallel()
	dir, ws, d := executingTask(t, 4)
	td := filepath.Join(dir, "tasks", "t1")
	const name = ".claim.w1.reused"
	drop := func(sub string) {
		t.Helper()
		body := fmt.Sprintf(`{"agent_id": "w1", "subtask_id": %q, "claimed_at": "2024-01-15T10:00:00.000Z"}`+"\n", sub)
		if err := os.WriteFile(filepath.Join(td, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	drop("st_1")
	process(t, d, "t1")
	for i, c := range []*tester{d, newDaemon(t, dir)} {
		drop(fmt.Sprintf("st_%d", i+2))
		process(t, c, "t1")
		if _, err := os.Lstat(filepath.Join(td, name)); !os.IsNotExist(err) {
			t.Fatalf("reused marker still in the task directory (%v)", err)
		}
		refusals := 0
		evs, _, _ := ws.ReadEvents(context.Background(), "t1")
		for _, e := range evs {
			if e.Name == machine.EventMarkerRefused && e.Attrs["file"] == name && e.Attrs["journaled"] == "3" &&
				e.Attrs["agent"] == "w1" && strings.Contains(e.Attrs["reason"], "already journaled") {
				refusals++
			}
		}
		if refusals != i+1 {
			t.Errorf("%d marker_refused events for the reused name, want %d", refusals, i+1)
		}
	}
	var with []int64
	for _, r := range readJournal(t, ws, "t1") {
		if r.File == name {
			with = append(with, r.Seq)
		}
	}
	if !slices.Equal(with, []int64{3}) {
		t.Errorf("records of %s: seqs %v, want [3] alone", name, with)
	}
	st, err := ws.ReadState(context.Background(), "t1")
	if err != nil {
		t.Fatal(err)
	}
	if st.Subtasks["st_1"].Status != "in_progress" || st.Subtasks["st_2"].Status != "pending" || st.Subtasks["st_3"].Status != "pending" {
		t.Errorf("subtasks %v %v %v: want the first claim alone applied", st.Subtasks["st_1"], st.Subtasks["st_2"], st.Subtasks["st_3"])
	}
	eventsOnce(t, ws, "t1")
}

// The set of journaled names is built only once a commit has a marker to
// take, and a name that shares a hash with a journaled one is still taken.
func TestJournaledNamesLazyAndExact(t *testing.T) {
	t.Parallel()
	dir, ws, _ := executingTask(t, 4)
	d := newDaemon(t, dir)
	process(t, d, "t1")
	c := d.taskOf("t1")
	if c.names != nil {
		t.Fatal("a commit with no marker read the journal's names")
	}
	claims(t, ws, "st_1")
	process(t, d, "t1")
	if c.names == nil || len(c.names.seqs) != 3 {
		t.Fatalf("journaled names after 3 records: %+v", c.names)
	}
	// Pretend .claim.w9.other hashes like the claim of seq 3.
	other := ".claim.w9.other"
	for h, seq := range c.names.seqs {
		if seq == 3 {
			delete(c.names.seqs, h)
		}
	}
	c.names.seqs[hashName(c.names, other)] = 3
	body := `{"agent_id": "w9", "subtask_id": "st_2", "claimed_at": "2024-01-15T10:00:00.000Z"}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "tasks", "t1", other), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if a := process(t, d, "t1"); a.Taken != 1 {
		t.Errorf("took %d markers, want the one whose hash was taken", a.Taken)
	}
	if recs := readJournal(t, ws, "t1"); recs[len(recs)-1].File != other {
		t.Errorf("last record is %s, want %s", recs[len(recs)-1].File, other)
	}
}
