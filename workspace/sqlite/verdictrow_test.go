package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/fixture"
	"github.com/workspaced/workspaced/internal/servetest"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/daemon"
	"github.com/workspaced/workspaced/workspace/machine"
	"github.com/workspaced/workspaced/workspace/tables"
)

// TestVerdictReadsItsOwnRow: in a task of 1,000 subtasks, the verdicts
// on a claim won and one lost, taken in one commit, are read from their
// journal rows, not the state: with the state's document made unreadable
// (its stamp kept) they are still what they were, and equal to what the
// machine says on the whole state, and the same once exported and
// imported (the rows then without excerpts). Once the state row has
// moved on (its version raised), the verdict reads the document again,
// and finds it unreadable.
func TestVerdictReadsItsOwnRow(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	w := newDBWatch(t, s)
	d := servetest.Start(t, s, daemon.Config{})
	ctx := t.Context()
	const task = "rows"
	state := func(want func(workspace.State) bool) func() bool {
		return func() bool { st, err := s.ReadState(ctx, task); return err == nil && want(st) }
	}
	if err := fixture.PrepareTask(ctx, s, task, 1000); err != nil {
		t.Fatal(err)
	}
	w.until(t, "plan proposed", state(func(st workspace.State) bool { return st.PlanStatus == "proposed" }))
	if err := fixture.ApprovePlan(ctx, s, task); err != nil {
		t.Fatal(err)
	}
	w.until(t, "executing", state(func(st workspace.State) bool { return st.Status == "executing" }))
	// Both claims dropped while no daemon serves are taken in one commit:
	// the state it writes is the one both excerpts were taken from.
	d.Stop()
	var names []string
	for _, agent := range []string{"agent_1", "agent_2"} {
		name, err := s.WriteClaim(ctx, task, agent, "st_500")
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, path.Base(name))
	}
	d = servetest.Start(t, s, daemon.Config{})
	w.until(t, "the claims decided", func() bool {
		_, where, err := s.ReadVerdict(task, names[1], 0)
		return err == nil && where == workspace.MarkerDecided
	})
	d.Stop()
	whole, err := s.ReadState(ctx, task)
	if err != nil {
		t.Fatal(err)
	}
	var excerpts int
	if err := s.DB().QueryRowContext(ctx, "SELECT count(*) FROM journal WHERE task_id = $1 AND verdict IS NOT NULL AND length(verdict) < 1000", task).Scan(&excerpts); err != nil || excerpts < 2 {
		t.Fatalf("journal rows with a small verdict excerpt: %d, %v", excerpts, err)
	}
	want := map[string]string{names[0]: workspace.VerdictWon, names[1]: workspace.VerdictLost}
	wantV := map[string]workspace.Verdict{}
	for _, name := range names {
		rec := journalRecord(t, s, task, name)
		wantV[name] = machine.Judge(whole, rec, name)
	}
	// Exported and imported, the rows have no excerpt (it is not part of
	// the tree) and the verdicts are read from the state, the same.
	out := filepath.Join(t.TempDir(), "tree")
	if _, err := s.Export(ctx, out); err != nil {
		t.Fatalf("export: %v", err)
	}
	imp, _, err := Init(ctx, "sqlite:"+filepath.Join(t.TempDir(), "imported.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer imp.Close()
	if _, err := imp.Import(ctx, out, ImportOptions{}); err != nil {
		t.Fatalf("import: %v", err)
	}
	if err := imp.DB().QueryRowContext(ctx, "SELECT count(*) FROM journal WHERE verdict IS NOT NULL").Scan(&excerpts); err != nil || excerpts != 0 {
		t.Errorf("imported journal rows with an excerpt: %d, %v", excerpts, err)
	}
	for _, name := range names {
		if v, _, err := imp.ReadVerdict(task, name, 0); err != nil || !reflect.DeepEqual(v, wantV[name]) {
			t.Errorf("%s imported: %+v, %v; want %+v", name, v, err, wantV[name])
		}
	}
	exec := func(q string) {
		t.Helper()
		if _, err := s.DB().ExecContext(ctx, q, task); err != nil {
			t.Fatal(err)
		}
	}
	exec("UPDATE state_history SET doc = '{not json' WHERE task_id = $1 AND backup = 0")
	for _, name := range names {
		v, where, err := s.ReadVerdict(task, name, 0)
		if err != nil || where != workspace.MarkerDecided || v.Verdict != want[name] || !reflect.DeepEqual(v, wantV[name]) {
			t.Errorf("%s, the document unreadable: %+v, %s, %v; want %+v", name, v, where, err, wantV[name])
		}
	}
	exec("UPDATE state_history SET version = version + 1 WHERE task_id = $1 AND backup = 0")
	if _, _, err := s.ReadVerdict(task, names[0], 0); !errors.Is(err, workspace.ErrInvalid) {
		t.Errorf("the state row moved on, its document unreadable: %v, want ErrInvalid", err)
	}
}

// journalRecord is the journal record of marker name.
func journalRecord(t *testing.T, s *Store, task, name string) workspace.JournalRecord {
	t.Helper()
	var body string
	if err := s.DB().QueryRow("SELECT record FROM journal WHERE task_id = $1 AND name = $2", task, name).Scan(&body); err != nil {
		t.Fatal(err)
	}
	var rec workspace.JournalRecord
	if err := json.Unmarshal([]byte(body), &rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestVerdictOnDatabaseBeforeExcerpts: a database of schema version 8,
// whose journal has no verdict column (a daemon of an older binary
// serves it), opened by this binary without migrating, answers verdicts
// from the state's document.
func TestVerdictOnDatabaseBeforeExcerpts(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "ws.db")
	ms, err := tables.Migrations(migrationFiles)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", dsn(p, "immediate", "FULL"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	at := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	st := workspace.State{TaskID: "t1", PlanID: "p", PlanVersion: 1, PlanStatus: machine.PlanApproved, Status: "executing", Phase: "executing",
		LastUpdated: at, JournalSeq: 2,
		Subtasks: map[string]*workspace.SubtaskState{"st_1": {Status: "in_progress", Worker: "a1", StartedAt: &at}},
		Errors:   []workspace.StateError{{At: at, Seq: 2, Agent: "a2", SubtaskID: "st_1", Message: "st_1 is claimed by a1"}}}
	doc, _ := json.Marshal(st)
	recs := map[string]workspace.JournalRecord{
		".claim.a1.x": {Seq: 1, TakenAt: at, Kind: workspace.KindClaim, Marker: workspace.Marker{AgentID: "a1", SubtaskID: "st_1"}},
		".claim.a2.x": {Seq: 2, TakenAt: at, Kind: workspace.KindClaim, Marker: workspace.Marker{AgentID: "a2", SubtaskID: "st_1"}},
	}
	stmts := []string{`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL,
		applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))`}
	for _, m := range ms[:8] {
		stmts = append(stmts, m.SQL, fmt.Sprintf("INSERT INTO schema_migrations (version, name) VALUES (%d, '%s')", m.Version, m.Name))
	}
	stmts = append(stmts, `INSERT INTO tasks (id, created_at, doc) VALUES ('t1', '2026-01-01T00:00:00.000Z', '{}')`)
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("version 8: %s: %v", q, err)
		}
	}
	if _, err := db.Exec("INSERT INTO states (task_id, journal_seq, doc, epoch, version) VALUES ('t1', 2, $1, 0, 3)", string(doc)); err != nil {
		t.Fatal(err)
	}
	for name, r := range recs {
		b, _ := json.Marshal(r)
		if _, err := db.Exec("INSERT INTO journal (task_id, seq, taken_at, name, record, epoch) VALUES ('t1', $1, 'x', $2, $3, 0)", r.Seq, name, string(b)); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Open(context.Background(), "sqlite:"+p)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for name, r := range recs {
		want := machine.Judge(st, r, name)
		got, where, err := s.ReadVerdict("t1", name, 0)
		if err != nil || where != workspace.MarkerDecided || !reflect.DeepEqual(got, want) {
			t.Errorf("%s on version 8: %+v, %s, %v; want %+v", name, got, where, err, want)
		}
	}
	var v int
	if err := db.QueryRow("SELECT max(version) FROM schema_migrations").Scan(&v); err != nil || v != 8 {
		t.Errorf("the database was migrated by reading it: version %d, %v", v, err)
	}
}
