package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"testing"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/internal/fixture"
	"github.com/workspaced/workspaced/internal/optdep"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// partsTask is a task of many subtasks committed claim by claim, with
// what each commit wrote: the documents by journal_seq, as
// atomicfile.Marshal encodes the committer's state.
type partsTask struct {
	t     *testing.T
	s     *Store
	id    string
	k     *sqlstore.Committer
	wrote map[int64]string
	claim int
}

func newPartsTask(t *testing.T, subtasks int) *partsTask {
	t.Helper()
	ctx := context.Background()
	s, _ := newStore(t)
	p := &partsTask{t: t, s: s, id: "t1", wrote: map[int64]string{}}
	if err := fixture.PrepareTask(ctx, s, p.id, subtasks); err != nil {
		t.Fatal(err)
	}
	p.k = s.Committer(p.id).(*sqlstore.Committer)
	p.commit()
	if err := fixture.ApprovePlan(ctx, s, p.id); err != nil {
		t.Fatal(err)
	}
	p.commit()
	return p
}

// commit commits the marker waiting and checks that the states view
// gives, byte for byte, the document the encoding of the state makes.
func (p *partsTask) commit() string {
	p.t.Helper()
	ctx := context.Background()
	if a, err := p.k.Commit(ctx, workspace.CommitRequest{}); err != nil || a.Taken != 1 {
		p.t.Fatalf("commit: %+v, %v", a, err)
	}
	doc, st := p.k.Known()
	want, err := atomicfile.Marshal(st)
	if err != nil {
		p.t.Fatal(err)
	}
	if doc != string(want) {
		p.t.Fatalf("the committer knows %d bytes other than the %d of its state's encoding", len(doc), len(want))
	}
	var got string
	if err := p.s.DB().QueryRowContext(ctx, "SELECT doc FROM states WHERE task_id = $1", p.id).Scan(&got); err != nil {
		p.t.Fatal(err)
	}
	if got != string(want) {
		p.t.Fatalf("states gives %d bytes other than the %d of the document written at journal_seq %d", len(got), len(want), st.JournalSeq)
	}
	p.wrote[st.JournalSeq] = got
	return got
}

// claimAndCommit claims the next subtask and commits it.
func (p *partsTask) claimAndCommit() string {
	p.t.Helper()
	p.claim++
	if _, err := p.s.WriteClaim(context.Background(), p.id, fmt.Sprintf("agent_%d", p.claim), fmt.Sprintf("st_%d", p.claim)); err != nil {
		p.t.Fatal(err)
	}
	return p.commit()
}

// parts is the number of rows of state_parts, their bytes and the
// largest id.
func (p *partsTask) parts() (n, bytes, maxID int64) {
	p.t.Helper()
	if err := p.s.DB().QueryRow("SELECT count(*), coalesce(sum(length(body)), 0), coalesce(max(id), 0) FROM state_parts").Scan(&n, &bytes, &maxID); err != nil {
		p.t.Fatal(err)
	}
	return n, bytes, maxID
}

// checkKept checks every row the task keeps: each backup is the document
// written at its journal_seq, no part is held by no row, and none not
// held by the newest row is unmarked as replaced.
func (p *partsTask) checkKept() {
	p.t.Helper()
	rows, err := p.s.DB().Query("SELECT journal_seq, doc FROM backups WHERE task_id = $1 ORDER BY n", p.id)
	if err != nil {
		p.t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var (
			seq int64
			doc string
		)
		if err := rows.Scan(&seq, &doc); err != nil {
			p.t.Fatal(err)
		}
		if want, ok := p.wrote[seq]; !ok || doc != want {
			p.t.Fatalf("the backup at journal_seq %d holds %d bytes other than the %d written then", seq, len(doc), len(want))
		}
		n++
	}
	if err := rows.Err(); err != nil {
		p.t.Fatal(err)
	}
	if n != workspace.DefaultBackupsKeep {
		p.t.Fatalf("%d backups kept, want %d", n, workspace.DefaultBackupsKeep)
	}
	var orphans, unmarked int
	if err := p.s.DB().QueryRow(`SELECT count(*) FROM state_parts p
		WHERE NOT EXISTS (SELECT 1 FROM state_history h, json_each(h.parts) j WHERE h.parts IS NOT NULL AND j.value = p.id)`).Scan(&orphans); err != nil {
		p.t.Fatal(err)
	}
	if err := p.s.DB().QueryRow(`SELECT count(*) FROM state_parts WHERE replaced_at IS NULL AND id NOT IN
		(SELECT j.value FROM state_history h, json_each(h.parts) j WHERE h.n = (SELECT max(n) FROM state_history WHERE task_id = $1))`, p.id).Scan(&unmarked); err != nil {
		p.t.Fatal(err)
	}
	if orphans != 0 || unmarked != 0 {
		p.t.Fatalf("%d parts held by no row, %d not held by the state and not marked replaced", orphans, unmarked)
	}
}

// A commit that follows the committer's own row writes the parts of the
// document its markers changed, not the document: at 1,000 subtasks (16
// blocks of entries) a claim inserts the shell's parts and one block.
// Every state and backup reads back as the document written, and the
// retention of backups leaves no part behind.
func TestStatePartsWriteWhatChanged(t *testing.T) {
	t.Parallel()
	p := newPartsTask(t, 1000)
	p.claimAndCommit() // the first after a document written whole
	for i := 0; i < 3*workspace.DefaultBackupsKeep; i++ {
		_, _, before := p.parts()
		doc := p.claimAndCommit()
		var n, bytes int64
		if err := p.s.DB().QueryRow("SELECT count(*), coalesce(sum(length(body)), 0) FROM state_parts WHERE id > $1", before).Scan(&n, &bytes); err != nil {
			t.Fatal(err)
		}
		if n == 0 || n > 4 || bytes*8 > int64(len(doc)) {
			t.Fatalf("claim %d inserted %d parts, %d bytes, of a document of %d: want a few parts, an eighth of it at most", p.claim, n, bytes, len(doc))
		}
	}
	p.checkKept()
	if n, bytes, _ := p.parts(); bytes > 3*int64(len(p.wrote[int64(p.claim)+2])) {
		t.Fatalf("%d parts of %d bytes kept for the state and %d backups", n, bytes, workspace.DefaultBackupsKeep)
	}
}

// A state not written by the committer (a backup restored, a committer
// of its own after a restart) is written whole again and replaces every
// part of the task: once its backups are gone, so are their parts.
func TestStatePartsAfterARestoreAndARestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPartsTask(t, 600)
	for i := 0; i < 4; i++ {
		p.claimAndCommit()
	}
	if _, err := p.s.RestoreBackup(ctx, p.id, "", func([]byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		p.claimAndCommit()
	}
	p.k = p.s.Committer(p.id).(*sqlstore.Committer) // as a daemon started again
	for i := 0; i < workspace.DefaultBackupsKeep+2; i++ {
		p.claimAndCommit()
	}
	p.checkKept()
}

// An agent reads the states and backups views with its own SQLite, such
// as Debian's python3 (SQLite 3.40): the documents assembled from parts
// must read there as they were written.
func TestStatePartsReadByPython(t *testing.T) {
	t.Parallel()
	py, err := exec.LookPath("python3")
	if err != nil {
		optdep.Skip(t, "python3", "python3 is not on PATH: the views cannot be read with its sqlite3")
	}
	p := newPartsTask(t, 600)
	for i := 0; i < workspace.DefaultBackupsKeep+2; i++ {
		p.claimAndCommit()
	}
	const script = `import json, sqlite3, sys
db = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)
rows = db.execute("SELECT journal_seq, doc FROM backups WHERE task_id = 't1' ORDER BY n").fetchall()
rows += db.execute("SELECT journal_seq, doc FROM states WHERE task_id = 't1'").fetchall()
json.dump({"version": sqlite3.sqlite_version, "rows": rows}, sys.stdout)
`
	out, err := exec.Command(py, "-c", script, p.s.Path()).Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	var got struct {
		Version string
		Rows    [][2]json.RawMessage
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Rows) != workspace.DefaultBackupsKeep+1 {
		t.Fatalf("python3's sqlite3 %s read %d rows, want the state and %d backups", got.Version, len(got.Rows), workspace.DefaultBackupsKeep)
	}
	for _, r := range got.Rows {
		var (
			seq int64
			doc string
		)
		if err := json.Unmarshal(r[0], &seq); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(r[1], &doc); err != nil {
			t.Fatal(err)
		}
		if want, ok := p.wrote[seq]; !ok || doc != want {
			t.Fatalf("python3's sqlite3 %s reads %d bytes at journal_seq %d, other than the %d written", got.Version, len(doc), seq, len(want))
		}
	}
}

// A task of fewer entries than dialect.StatePartsFrom has its states
// written whole: a document of a block or two costs less as one row.
func TestStatePartsNotForSmallTasks(t *testing.T) {
	t.Parallel()
	p := newPartsTask(t, 100)
	for i := 0; i < 3; i++ {
		p.claimAndCommit()
	}
	if n, _, _ := p.parts(); n != 0 {
		t.Fatalf("%d parts written for a task of 100 subtasks, want its states whole", n)
	}
}

// A task that shrinks below dialect.StatePartsFrom (an amendment
// withdrawing subtasks) has its states written whole from then on; the
// parts its rows held before are marked replaced by the first whole row,
// and go once no kept row holds them.
func TestStatePartsWhenTheTaskShrinks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPartsTask(t, dialect.StatePartsFrom+8)
	for i := 0; i < 2; i++ {
		p.claimAndCommit()
	}
	if n, _, _ := p.parts(); n == 0 {
		t.Fatal("no parts written for a task past the threshold")
	}
	// Withdraw 40 pending subtasks, and approve the amendment.
	_, st := p.k.Known()
	cur, err := p.s.ReadPlan(ctx, p.id, st.PlanVersion)
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
	if _, err := p.s.WriteAmendment(ctx, p.id, "coordinator", data); err != nil {
		t.Fatal(err)
	}
	if _, err := p.s.WriteDone(ctx, workspace.DoneRequest{TaskID: p.id, Agent: "coordinator", OutputFile: "plan.json"}); err != nil {
		t.Fatal(err)
	}
	p.commit()
	rel, err := p.s.WriteReview(ctx, p.id, "amend_v2", "reviewer", []byte(`{"type":"plan_review","verdict":"approved"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.s.WriteDone(ctx, workspace.DoneRequest{TaskID: p.id, Agent: "reviewer", OutputFile: rel}); err != nil {
		t.Fatal(err)
	}
	p.commit()
	if _, st := p.k.Known(); len(st.Subtasks)+len(st.Checkpoints)+len(st.Workers) >= dialect.StatePartsFrom {
		t.Fatalf("the amended task has %d subtasks, %d workers: still past the threshold", len(st.Subtasks), len(st.Workers))
	}
	var whole bool
	if err := p.s.DB().QueryRow("SELECT parts IS NULL FROM state_history WHERE task_id = $1 ORDER BY n DESC LIMIT 1", p.id).Scan(&whole); err != nil || !whole {
		t.Fatalf("the state of the shrunk task is not a whole row (%v)", err)
	}
	for i := 0; i < workspace.DefaultBackupsKeep+2; i++ {
		p.claimAndCommit()
	}
	p.checkKept()
	if n, _, _ := p.parts(); n != 0 {
		t.Fatalf("%d parts kept once no row holds them", n)
	}
}
