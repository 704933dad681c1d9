package sqlite_test

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/internal/poll"
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

// integrity fails the test unless PRAGMA integrity_check says ok. It
// asks the sqlite3 shell when there is one (SQLite's own build, a process
// of its own, and quick under -race), else the store's driver.
func integrity(t *testing.T, s *sqlite.Store) {
	t.Helper()
	if sh, err := exec.LookPath("sqlite3"); err == nil {
		out, err := exec.Command(sh, "-readonly", s.Path(), "PRAGMA integrity_check").CombinedOutput()
		if err != nil || string(out) != "ok\n" {
			t.Fatalf("integrity_check: %v: %q", err, out)
		}
		return
	}
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

// taskCheck checks a task's state row and journal, again and again as
// they grow: the state validates (the schema, the task's id, no null map),
// reflects the whole journal (journal_seq its last seq) and equals the
// journal folded by the machine from the task's first state; the
// journal's seqs run 1…n and each marker name is in it once. It folds
// only the records added since its last check (the journal is append
// only), so a check after every kill costs what the kill added.
type taskCheck struct {
	id    string
	task  *workspace.Task
	st    workspace.State // the journal folded so far
	recs  []workspace.JournalRecord
	names map[string]int64
	doc   string // the state last checked
}

func newTaskCheck(id string) *taskCheck { return &taskCheck{id: id, names: map[string]int64{}} }

// check checks the task now and returns its journal.
func (c *taskCheck) check(t *testing.T, s *sqlite.Store) []workspace.JournalRecord {
	t.Helper()
	ctx := t.Context()
	if c.task == nil {
		task, err := s.GetTask(ctx, c.id)
		if err != nil {
			t.Fatal(err)
		}
		c.task, c.st = &task, machine.Init(task)
	}
	var (
		doc string
		seq int64
	)
	err := s.DB().QueryRowContext(ctx, "SELECT doc, journal_seq FROM states WHERE task_id = $1", c.id).Scan(&doc, &seq)
	if errors.Is(err, sql.ErrNoRows) {
		// No commit of the task yet: nothing journaled either.
		if recs, err := s.ReadJournal(ctx, c.id); err != nil || len(recs) > 0 {
			t.Fatalf("task %s: no state but %d journal records (%v)", c.id, len(recs), err)
		}
		return nil
	}
	if err != nil {
		t.Fatalf("state of task %s: %v", c.id, err)
	}
	if doc != c.doc { // the same document validated last time
		if err := schemas.Validate(schemas.KindState, []byte(doc)); err != nil {
			t.Fatalf("state of task %s does not validate: %v", c.id, err)
		}
		c.doc = doc
	}
	var st workspace.State
	if err := json.Unmarshal([]byte(doc), &st); err != nil {
		t.Fatal(err)
	}
	if st.TaskID != c.id || st.Subtasks == nil || st.Checkpoints == nil || st.Workers == nil || st.Errors == nil {
		t.Fatalf("state of task %s: task %q or a null map", c.id, st.TaskID)
	}
	added := c.readAfter(t, s, int64(len(c.recs)))
	for _, r := range added {
		if r.Seq != int64(len(c.recs)+1) {
			t.Fatalf("task %s: journal record %d has seq %d", c.id, len(c.recs)+1, r.Seq)
		}
		if prev, dup := c.names[r.File]; dup {
			t.Fatalf("task %s: marker %s journaled twice (seq %d and %d)", c.id, r.File, prev, r.Seq)
		}
		c.names[r.File] = r.Seq
		c.recs = append(c.recs, r)
	}
	if st.JournalSeq != int64(len(c.recs)) || seq != st.JournalSeq {
		t.Fatalf("task %s: state at seq %d (row %d), journal holds %d records", c.id, st.JournalSeq, seq, len(c.recs))
	}
	if c.st, _, err = machine.Continue(c.st, clitest.JournalPlans(c.recs), added); err != nil {
		t.Fatalf("task %s: fold the journal: %v", c.id, err)
	}
	a, _ := json.Marshal(st)
	b, _ := json.Marshal(c.st)
	if !bytes.Equal(a, b) {
		t.Fatalf("task %s: the state differs from its journal folded by the machine:\n%s\n%s", c.id, a, b)
	}
	return c.recs
}

// readAfter reads the task's journal records after seq.
func (c *taskCheck) readAfter(t *testing.T, s *sqlite.Store, seq int64) []workspace.JournalRecord {
	t.Helper()
	rows, err := s.DB().QueryContext(t.Context(), "SELECT record FROM journal WHERE task_id = $1 AND seq > $2 ORDER BY seq", c.id, seq)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []workspace.JournalRecord
	for rows.Next() {
		var b string
		var r workspace.JournalRecord
		if err := rows.Scan(&b); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(b), &r); err != nil {
			t.Fatalf("task %s: journal record after seq %d: %v", c.id, seq, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
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

// eventually is poll.Until with a deadline generous enough for a loaded
// machine.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	poll.Until(t, 2*time.Minute, what, cond)
}
