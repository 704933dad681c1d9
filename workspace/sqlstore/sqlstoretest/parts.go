// Package sqlstoretest holds the tests every driver of the one SQL store
// (workspace/sqlstore) runs over its own database, of what the drivers
// share below the workspace.Store contract (which workspace/storetest
// holds every store to): each a function a driver's test calls with a
// fresh store and the SQL that is its own, so that every driver runs
// through the same cases.
package sqlstoretest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/internal/fixture"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// Parts is a fresh store of a driver, with no task, as the tests of the
// state parts (sqlstore's CommitWrite.Parts) reach it.
type Parts struct {
	// Store is the store; its Committer is a *sqlstore.Committer.
	Store workspace.Served
	// DB queries the store's database: the states and backups views, and
	// the state_parts table.
	DB sqlstore.Executor
	// PartsFrom is the driver's Dialect.StatePartsFrom.
	PartsFrom int
	// Settled checks, with the driver's own SQL, the parts once a task's
	// rows are kept: an error says which parts are held by no row, are
	// not held by the state row and not marked replaced, or (where the
	// driver can tell) are marked replaced before a row that holds them.
	Settled func(ctx context.Context, task string) error
	// StateWhole is the query of one boolean, of a task ($1): its state
	// is a whole row, holding no parts.
	StateWhole string
	// BackupWhole, where a backup is a row of its own (PostgreSQL's
	// backup_rows; SQLite's state row becomes the backup), is the query
	// of one boolean, of a task ($1): its newest backup is a whole
	// document rather than the row listing the parts.
	BackupWhole string
}

// Task is a task of many subtasks committed claim by claim, with what
// each commit wrote: the documents by journal_seq, as atomicfile.Marshal
// encodes the committer's state.
type Task struct {
	t *testing.T
	p Parts
	c *sqlstore.Committer
	// ID is the task's id, "t1".
	ID string
	// Wrote is the document each commit wrote, by its journal_seq.
	Wrote map[int64]string
	// Claims is the number of subtasks claimed: st_1 to st_<Claims>.
	Claims int
}

// NewTask makes a task of subtasks on p's store, its plan approved, each
// step committed.
func NewTask(t *testing.T, p Parts, subtasks int) *Task {
	t.Helper()
	ctx := context.Background()
	tk := &Task{t: t, p: p, ID: "t1", Wrote: map[int64]string{}}
	if err := fixture.PrepareTask(ctx, p.Store, tk.ID, subtasks); err != nil {
		t.Fatal(err)
	}
	tk.Restart()
	tk.Commit()
	if err := fixture.ApprovePlan(ctx, p.Store, tk.ID); err != nil {
		t.Fatal(err)
	}
	tk.Commit()
	return tk
}

// Restart takes a committer of the task's own, as a daemon started again
// does: it knows no row written before.
func (tk *Task) Restart() {
	tk.t.Helper()
	c, ok := tk.p.Store.Committer(tk.ID).(*sqlstore.Committer)
	if !ok {
		tk.t.Fatalf("the store's committer is a %T, not the SQL store's", tk.p.Store.Committer(tk.ID))
	}
	tk.c = c
}

// known is the state the committer knows: its own, folded in place by
// its next Commit.
func (tk *Task) known() workspace.State {
	_, st := tk.c.Known()
	return st
}

// Commit commits the marker waiting and checks that the states view
// gives, byte for byte, the document the encoding of the state makes.
func (tk *Task) Commit() string {
	tk.t.Helper()
	ctx := context.Background()
	if a, err := tk.c.Commit(ctx, workspace.CommitRequest{}); err != nil || a.Taken != 1 {
		tk.t.Fatalf("commit: %+v, %v", a, err)
	}
	doc, st := tk.c.Known()
	want, err := atomicfile.Marshal(st)
	if err != nil {
		tk.t.Fatal(err)
	}
	if doc != string(want) {
		tk.t.Fatalf("the committer knows %d bytes other than the %d of its state's encoding", len(doc), len(want))
	}
	var got string
	if err := tk.p.DB.QueryRow(ctx, "SELECT doc FROM states WHERE task_id = $1", tk.ID).Scan(&got); err != nil {
		tk.t.Fatal(err)
	}
	if got != string(want) {
		tk.t.Fatalf("states gives %d bytes other than the %d of the document written at journal_seq %d", len(got), len(want), st.JournalSeq)
	}
	tk.Wrote[st.JournalSeq] = got
	return got
}

// ClaimAndCommit claims the next subtask and commits it.
func (tk *Task) ClaimAndCommit() string {
	tk.t.Helper()
	tk.Claims++
	if _, err := tk.p.Store.WriteClaim(context.Background(), tk.ID, fmt.Sprintf("agent_%d", tk.Claims), fmt.Sprintf("st_%d", tk.Claims)); err != nil {
		tk.t.Fatal(err)
	}
	return tk.Commit()
}

// ClaimAndCommitN claims the next n subtasks, committing each.
func (tk *Task) ClaimAndCommitN(n int) {
	tk.t.Helper()
	for range n {
		tk.ClaimAndCommit()
	}
}

// Parts is the number of rows of state_parts, their bytes and the
// largest id.
func (tk *Task) Parts() (n, bytes, maxID int64) {
	tk.t.Helper()
	if err := tk.p.DB.QueryRow(context.Background(), "SELECT count(*), coalesce(sum(length(body)), 0), coalesce(max(id), 0) FROM state_parts").
		Scan(&n, &bytes, &maxID); err != nil {
		tk.t.Fatal(err)
	}
	return n, bytes, maxID
}

// CheckKept checks every row the task keeps: each backup is the document
// written at its journal_seq, DefaultBackupsKeep of them, and the parts
// are settled (Parts.Settled).
func (tk *Task) CheckKept() {
	tk.t.Helper()
	ctx := context.Background()
	rows, err := tk.p.DB.Query(ctx, "SELECT journal_seq, doc FROM backups WHERE task_id = $1 ORDER BY n", tk.ID)
	if err != nil {
		tk.t.Fatal(err)
	}
	n := tk.ReadBack(rows, "the backups view")
	if n != workspace.DefaultBackupsKeep {
		tk.t.Fatalf("%d backups kept, want %d", n, workspace.DefaultBackupsKeep)
	}
	if err := tk.p.Settled(ctx, tk.ID); err != nil {
		tk.t.Fatal(err)
	}
}

// ReadBack checks rows of (journal_seq, doc), read by who (a view, a
// client, a role), against the documents written at those journal_seqs,
// and closes them; it returns how many rows it read. pgx.Rows are
// sqlstore.Rows.
func (tk *Task) ReadBack(rows sqlstore.Rows, who string) int {
	tk.t.Helper()
	defer rows.Close()
	n := 0
	for rows.Next() {
		var (
			seq int64
			doc string
		)
		if err := rows.Scan(&seq, &doc); err != nil {
			tk.t.Fatal(err)
		}
		if want, ok := tk.Wrote[seq]; !ok || doc != want {
			tk.t.Fatalf("%s reads %d bytes at journal_seq %d, other than the %d written then", who, len(doc), seq, len(want))
		}
		n++
	}
	if err := rows.Err(); err != nil {
		tk.t.Fatal(err)
	}
	return n
}

// RunParts runs every driver's tests of a state kept in parts, each a
// parallel subtest on a fresh store that open makes.
func RunParts(t *testing.T, open func(*testing.T) Parts) {
	for _, tc := range []struct {
		name string
		test func(*testing.T, Parts)
	}{
		{"WriteWhatChanged", PartsWriteWhatChanged},
		{"AfterARestoreAndARestart", PartsAfterARestoreAndARestart},
		{"NotForSmallTasks", PartsNotForSmallTasks},
		{"WhenTheTaskShrinks", PartsWhenTheTaskShrinks},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.test(t, open(t))
		})
	}
}

// PartsWriteWhatChanged: a commit that follows the committer's own row
// writes the parts of the document its markers changed, not the
// document: at 1,000 subtasks (16 blocks of entries) a claim inserts the
// shell's parts and one block, and, where a backup is a row of its own,
// its backup is the row listing the parts. Every state and backup reads
// back as the document written, and the retention of backups leaves no
// part behind.
func PartsWriteWhatChanged(t *testing.T, p Parts) {
	ctx := context.Background()
	tk := NewTask(t, p, 1000)
	tk.ClaimAndCommit() // the first after a document written whole
	for i := 0; i < 3*workspace.DefaultBackupsKeep; i++ {
		_, _, before := tk.Parts()
		doc := tk.ClaimAndCommit()
		var n, bytes int64
		if err := p.DB.QueryRow(ctx, "SELECT count(*), coalesce(sum(length(body)), 0) FROM state_parts WHERE id > $1", before).Scan(&n, &bytes); err != nil {
			t.Fatal(err)
		}
		if n == 0 || n > 4 || bytes*8 > int64(len(doc)) {
			t.Fatalf("claim %d inserted %d parts, %d bytes, of a document of %d: want a few parts, an eighth of it at most", tk.Claims, n, bytes, len(doc))
		}
		if p.BackupWhole == "" {
			continue
		}
		var whole bool
		if err := p.DB.QueryRow(ctx, p.BackupWhole, tk.ID).Scan(&whole); err != nil || whole {
			t.Fatalf("claim %d kept its backup whole (%v), want the row of ids", tk.Claims, err)
		}
	}
	tk.CheckKept()
	if n, bytes, _ := tk.Parts(); bytes > 3*int64(len(tk.Wrote[int64(tk.Claims)+2])) {
		t.Fatalf("%d parts of %d bytes kept for the state and %d backups", n, bytes, workspace.DefaultBackupsKeep)
	}
}

// PartsAfterARestoreAndARestart: a state not written by the committer (a
// backup restored, a committer of its own after a restart) is written
// whole again and replaces every part of the task: once its backups are
// gone, so are their parts.
func PartsAfterARestoreAndARestart(t *testing.T, p Parts) {
	ctx := context.Background()
	tk := NewTask(t, p, 600)
	tk.ClaimAndCommitN(4)
	if _, err := p.Store.RestoreBackup(ctx, tk.ID, "", func([]byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
	tk.ClaimAndCommitN(2)
	tk.Restart()
	tk.ClaimAndCommitN(workspace.DefaultBackupsKeep + 2)
	tk.CheckKept()
}

// PartsNotForSmallTasks: a task of fewer entries than
// Dialect.StatePartsFrom has its states written whole: a document of a
// block or two costs less as one row.
func PartsNotForSmallTasks(t *testing.T, p Parts) {
	tk := NewTask(t, p, 100)
	tk.ClaimAndCommitN(3)
	if n, _, _ := tk.Parts(); n != 0 {
		t.Fatalf("%d parts written for a task of 100 subtasks, want its states whole", n)
	}
}

// PartsWhenTheTaskShrinks: a task that shrinks below
// Dialect.StatePartsFrom (an amendment withdrawing subtasks) has its
// states written whole from then on; the parts its rows held before are
// marked replaced by the first whole row, and go once no kept row holds
// them.
func PartsWhenTheTaskShrinks(t *testing.T, p Parts) {
	ctx := context.Background()
	s := p.Store
	tk := NewTask(t, p, p.PartsFrom+8)
	tk.ClaimAndCommitN(2)
	if n, _, _ := tk.Parts(); n == 0 {
		t.Fatal("no parts written for a task past the threshold")
	}
	// Withdraw 40 pending subtasks, and approve the amendment.
	cur, err := s.ReadPlan(ctx, tk.ID, tk.known().PlanVersion)
	if err != nil {
		t.Fatal(err)
	}
	var gone []string
	for i := range 40 {
		gone = append(gone, fmt.Sprintf("st_%d", len(cur.Subtasks)-i))
	}
	next, err := workspace.PlanAmendment{Withdraw: gone}.Apply(*cur)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(next)
	if _, err := s.WriteAmendment(ctx, tk.ID, "coordinator", data); err != nil {
		t.Fatal(err)
	}
	if _, err := s.WriteDone(ctx, workspace.DoneRequest{TaskID: tk.ID, Agent: "coordinator", OutputFile: "plan.json"}); err != nil {
		t.Fatal(err)
	}
	tk.Commit()
	rel, err := s.WriteReview(ctx, tk.ID, "amend_v2", "reviewer", []byte(`{"type":"plan_review","verdict":"approved"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.WriteDone(ctx, workspace.DoneRequest{TaskID: tk.ID, Agent: "reviewer", OutputFile: rel}); err != nil {
		t.Fatal(err)
	}
	tk.Commit()
	if st := tk.known(); len(st.Subtasks)+len(st.Checkpoints)+len(st.Workers) >= p.PartsFrom {
		t.Fatalf("the amended task has %d subtasks, %d workers: still past the threshold", len(st.Subtasks), len(st.Workers))
	}
	var whole bool
	if err := p.DB.QueryRow(ctx, p.StateWhole, tk.ID).Scan(&whole); err != nil || !whole {
		t.Fatalf("the state of the shrunk task is not a whole row (%v)", err)
	}
	tk.ClaimAndCommitN(workspace.DefaultBackupsKeep + 2)
	tk.CheckKept()
	if n, _, _ := tk.Parts(); n != 0 {
		t.Fatalf("%d parts kept once no row holds them", n)
	}
}
