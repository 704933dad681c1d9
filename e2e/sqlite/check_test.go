package sqlite_test

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/schemas"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/machine"
	"github.com/workspaced/workspaced/workspace/sqlite"
)

// Invariants of a sqlite: workspace, checked from the test process on
// the database the daemon and the agents write: SQLite's own integrity,
// every state valid and equal to its journal folded by the machine, every
// marker name journaled at most once, every marker an agent reported
// written either journaled or still waiting, and every event of every
// record logged once, in order.

// integrity fails the test unless PRAGMA integrity_check says ok.
func integrity(t *testing.T, s *sqlite.Store) {
	t.Helper()
	rows, err := s.DB().QueryContext(t.Context(), "PRAGMA integrity_check")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			t.Fatal(err)
		}
		got = append(got, l)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{"ok"}) {
		t.Fatalf("integrity_check: %q", got)
	}
}

// checkTask checks task id's state row and journal: the state validates
// (the schema, the task's id, no null map), reflects the whole journal
// (journal_seq the last seq), and equals the journal replayed by the
// machine; the journal's seqs run 1…n and each marker name is in it once.
// It returns the records.
func checkTask(t *testing.T, s *sqlite.Store, id string) []workspace.JournalRecord {
	t.Helper()
	ctx := t.Context()
	var (
		doc string
		seq int64
	)
	err := s.DB().QueryRowContext(ctx, "SELECT doc, journal_seq FROM states WHERE task_id = $1", id).Scan(&doc, &seq)
	if errors.Is(err, sql.ErrNoRows) {
		// No commit of the task yet: nothing journaled either.
		if recs, err := s.ReadJournal(ctx, id); err != nil || len(recs) > 0 {
			t.Fatalf("task %s: no state but %d journal records (%v)", id, len(recs), err)
		}
		return nil
	}
	if err != nil {
		t.Fatalf("state of task %s: %v", id, err)
	}
	if err := schemas.Validate(schemas.KindState, []byte(doc)); err != nil {
		t.Fatalf("state of task %s does not validate: %v", id, err)
	}
	var st workspace.State
	if err := json.Unmarshal([]byte(doc), &st); err != nil {
		t.Fatal(err)
	}
	if st.TaskID != id || st.Subtasks == nil || st.Checkpoints == nil || st.Workers == nil || st.Errors == nil {
		t.Fatalf("state of task %s: task %q or a null map", id, st.TaskID)
	}
	recs, err := s.ReadJournal(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]int64{}
	for i, r := range recs {
		if r.Seq != int64(i+1) {
			t.Fatalf("task %s: journal record %d has seq %d", id, i+1, r.Seq)
		}
		if prev, dup := names[r.File]; dup {
			t.Fatalf("task %s: marker %s journaled twice (seq %d and %d)", id, r.File, prev, r.Seq)
		}
		names[r.File] = r.Seq
	}
	if st.JournalSeq != int64(len(recs)) || seq != st.JournalSeq {
		t.Fatalf("task %s: state at seq %d (row %d), journal holds %d records", id, st.JournalSeq, seq, len(recs))
	}
	task, err := s.GetTask(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	re, _, err := machine.Replay(task, journalPlans(recs), recs)
	if err != nil {
		t.Fatalf("task %s: replay the journal: %v", id, err)
	}
	a, _ := json.Marshal(st)
	b, _ := json.Marshal(re)
	if !bytes.Equal(a, b) {
		t.Fatalf("task %s: the state differs from its journal folded by the machine:\n%s\n%s", id, a, b)
	}
	return recs
}

// journalPlans finds a plan version among the records that carry one.
func journalPlans(recs []workspace.JournalRecord) func(int) (*workspace.Plan, error) {
	return func(version int) (*workspace.Plan, error) {
		for _, r := range slices.Backward(recs) {
			if r.Plan != nil && r.Plan.Version == version {
				return r.Plan, nil
			}
		}
		return nil, fmt.Errorf("no plan v%d in the journal", version)
	}
}

// checkWritten checks that every marker of task id an agent reported
// written (name → task/subtask) is journaled once or still waiting; it
// returns how many wait.
func checkWritten(t *testing.T, s *sqlite.Store, id string, recs []workspace.JournalRecord, wrote map[string]string) int {
	t.Helper()
	journaled := map[string]bool{}
	for _, r := range recs {
		journaled[r.File] = true
	}
	rows, err := s.DB().QueryContext(t.Context(), "SELECT name FROM markers WHERE task_id = $1", id)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	waiting := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		waiting[n] = true
	}
	n := 0
	for name, sub := range wrote {
		if !strings.HasPrefix(sub, id+"/") {
			continue
		}
		switch {
		case journaled[name] && waiting[name]:
			t.Fatalf("task %s: marker %s (subtask %s) both journaled and waiting", id, name, sub)
		case waiting[name]:
			n++
		case !journaled[name]:
			t.Fatalf("task %s: marker %s (subtask %s) was written but is neither journaled nor waiting: lost", id, name, sub)
		}
	}
	return n
}

// checkEventsOnce checks that the events of task id hold every event its
// journal makes, exactly once and in order (other events, of entries and
// threads, may sit between them). It returns how many it counted.
func checkEventsOnce(t *testing.T, s *sqlite.Store, id string, recs []workspace.JournalRecord) int {
	t.Helper()
	task, err := s.GetTask(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	_, evs, err := machine.Continue(machine.Init(task), journalPlans(recs), recs)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]string, len(evs))
	wanted := map[string]bool{}
	for i, e := range evs {
		want[i] = workspace.FormatEvent(e)
		wanted[want[i]] = true
	}
	logged, bad, err := s.ReadEvents(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 {
		t.Fatalf("task %s: %d events do not parse: %v", id, len(bad), bad[0])
	}
	var got []string
	for _, e := range logged {
		if l := workspace.FormatEvent(e); wanted[l] {
			got = append(got, l)
		}
	}
	if !slices.Equal(got, want) {
		for i := range max(len(got), len(want)) {
			g, w := "-", "-"
			if i < len(got) {
				g = got[i]
			}
			if i < len(want) {
				w = want[i]
			}
			if g != w {
				t.Fatalf("task %s: %d events logged of the %d its %d records make; first difference at event %d:\n  logged %s\n  want   %s",
					id, len(got), len(want), len(recs), i+1, g, w)
			}
		}
	}
	return len(want)
}

// eventually polls cond every 10 ms until it holds, failing the test
// after a deadline generous enough for a loaded machine.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	last := ""
	for time.Now().Before(deadline) {
		ok, msg := cond()
		if ok {
			return
		}
		last = msg
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s: %s", what, last)
}
