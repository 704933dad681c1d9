package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/internal/fixture"
	"github.com/workspaced/workspaced/internal/pgtest"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
	"github.com/workspaced/workspaced/workspace/tables"
)

// partsTask is a task of many subtasks committed claim by claim, with
// what each commit wrote: the documents by journal_seq, as
// atomicfile.Marshal encodes the committer's state.
type partsTask struct {
	t     *testing.T
	s     *Store
	root  string
	id    string
	k     *sqlstore.Committer
	wrote map[int64]string
	claim int
}

func newPartsTask(t *testing.T, subtasks int) *partsTask {
	t.Helper()
	ctx := context.Background()
	s, root := newStore(t)
	p := &partsTask{t: t, s: s, root: root, id: "t1", wrote: map[int64]string{}}
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
	if err := p.s.pool.QueryRow(ctx, "SELECT doc FROM states WHERE task_id = $1", p.id).Scan(&got); err != nil {
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
	if err := p.s.pool.QueryRow(context.Background(), "SELECT count(*), coalesce(sum(length(body)), 0), coalesce(max(id), 0) FROM state_parts").
		Scan(&n, &bytes, &maxID); err != nil {
		p.t.Fatal(err)
	}
	return n, bytes, maxID
}

// checkKept checks every row the task keeps: each backup is the document
// written at its journal_seq, no part is held by no row, none not held by
// the state row is unmarked as replaced, and none is marked replaced
// before a row that holds it (retention would take it from that row).
func (p *partsTask) checkKept() {
	p.t.Helper()
	ctx := context.Background()
	rows, err := p.s.pool.Query(ctx, "SELECT journal_seq, doc FROM backups WHERE task_id = $1 ORDER BY n", p.id)
	if err != nil {
		p.t.Fatal(err)
	}
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
	var orphans, unmarked, early int
	if err := p.s.pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM state_parts p WHERE NOT EXISTS (SELECT 1 FROM state_rows s WHERE p.id = ANY (s.parts))
			AND NOT EXISTS (SELECT 1 FROM backup_rows b WHERE p.id = ANY (b.parts))),
		(SELECT count(*) FROM state_parts p WHERE replaced_at IS NULL AND NOT EXISTS (SELECT 1 FROM state_rows s WHERE p.id = ANY (s.parts))),
		(SELECT count(*) FROM state_parts p WHERE replaced_at IS NOT NULL AND (EXISTS (SELECT 1 FROM state_rows s WHERE p.id = ANY (s.parts))
			OR EXISTS (SELECT 1 FROM backup_rows b WHERE b.n > p.replaced_at AND p.id = ANY (b.parts))))`).Scan(&orphans, &unmarked, &early); err != nil {
		p.t.Fatal(err)
	}
	if orphans != 0 || unmarked != 0 || early != 0 {
		p.t.Fatalf("%d parts held by no row, %d not held by the state and not marked replaced, %d marked replaced before a row holding them",
			orphans, unmarked, early)
	}
}

// A commit that follows the committer's own row writes the parts of the
// document its markers changed, not the document: at 1,000 subtasks (16
// blocks of entries) a claim inserts the shell's parts and one block,
// and its backup is the row listing the parts. Every state and backup
// reads back as the document written, and the retention of backups
// leaves no part behind.
func TestStatePartsWriteWhatChanged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPartsTask(t, 1000)
	p.claimAndCommit() // the first after a document written whole
	for i := 0; i < 3*workspace.DefaultBackupsKeep; i++ {
		_, _, before := p.parts()
		doc := p.claimAndCommit()
		var n, bytes int64
		if err := p.s.pool.QueryRow(ctx, "SELECT count(*), coalesce(sum(length(body)), 0) FROM state_parts WHERE id > $1", before).Scan(&n, &bytes); err != nil {
			t.Fatal(err)
		}
		if n == 0 || n > 4 || bytes*8 > int64(len(doc)) {
			t.Fatalf("claim %d inserted %d parts, %d bytes, of a document of %d: want a few parts, an eighth of it at most", p.claim, n, bytes, len(doc))
		}
		var whole bool
		if err := p.s.pool.QueryRow(ctx, "SELECT doc IS NOT NULL FROM backup_rows WHERE task_id = $1 ORDER BY n DESC LIMIT 1", p.id).Scan(&whole); err != nil || whole {
			t.Fatalf("claim %d kept its backup whole (%v), want the row of ids", p.claim, err)
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

// A state or backup written by hand through the views (as the owner may)
// is a whole row: it reads back as written, the parts it held are
// settled, and the committer reads the document again and goes on.
func TestStatePartsWrittenThroughTheViews(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPartsTask(t, 600)
	for i := 0; i < workspace.DefaultBackupsKeep+1; i++ {
		p.claimAndCommit()
	}
	// The owner's client, its search_path its own: the views' triggers
	// write the tables of the views' schema.
	connStr, _, err := ParseURL(p.root)
	if err != nil {
		t.Fatal(err)
	}
	own, err := pgx.Connect(ctx, connStr)
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close(ctx)
	sc := pgx.Identifier{p.s.Schema()}.Sanitize()
	// A backup's name set keeps its parts; the state's doc set is
	// written whole.
	var n, seq int64
	if err := p.s.pool.QueryRow(ctx, "SELECT n, journal_seq FROM backups WHERE task_id = $1 ORDER BY n DESC LIMIT 1", p.id).Scan(&n, &seq); err != nil {
		t.Fatal(err)
	}
	if _, err := own.Exec(ctx, "UPDATE "+sc+".backups SET name = 'kept' WHERE n = $1", n); err != nil {
		t.Fatal(err)
	}
	var parts bool
	if err := p.s.pool.QueryRow(ctx, "SELECT parts IS NOT NULL FROM backup_rows WHERE n = $1", n).Scan(&parts); err != nil || !parts {
		t.Fatalf("a backup whose name was set lost its parts (%v)", err)
	}
	if _, err := own.Exec(ctx, "UPDATE "+sc+".states SET doc = doc || ' ' WHERE task_id = $1", p.id); err != nil {
		t.Fatal(err)
	}
	var doc string
	if err := p.s.pool.QueryRow(ctx, "SELECT doc FROM states WHERE task_id = $1", p.id).Scan(&doc); err != nil || doc != p.wrote[int64(p.claim)+2]+" " {
		t.Fatalf("the state written by hand reads %d bytes (%v)", len(doc), err)
	}
	for i := 0; i < workspace.DefaultBackupsKeep+2; i++ {
		p.claimAndCommit()
	}
	p.checkKept()
	// A backup deleted by hand takes the parts only it held.
	if _, err := own.Exec(ctx, "DELETE FROM "+sc+".backups WHERE task_id = $1", p.id); err != nil {
		t.Fatal(err)
	}
	var orphans, total int
	if err := p.s.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM state_rows s WHERE p.id = ANY (s.parts))), count(*)
		FROM state_parts p`).Scan(&orphans, &total); err != nil || orphans != 0 || total == 0 {
		t.Fatalf("after the backups' deletion %d parts of %d held by no row (%v)", orphans, total, err)
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
	if err := p.s.pool.QueryRow(ctx, "SELECT parts IS NULL FROM state_rows WHERE task_id = $1", p.id).Scan(&whole); err != nil || !whole {
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

// agentConn connects to the store's database as role, which
// Store.CreateRoles made.
func agentConn(t *testing.T, root, role string) *pgx.Conn {
	t.Helper()
	conn, _, err := ParseURL(root)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(conn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	c, err := pgx.Connect(context.Background(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// mustBeRefused checks that each statement is refused to conn for want
// of the privilege.
func mustBeRefused(t *testing.T, conn *pgx.Conn, role string, stmts ...string) {
	t.Helper()
	for _, q := range stmts {
		_, err := conn.Exec(context.Background(), q)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "42501" { // insufficient_privilege
			t.Errorf("%s: %s: %v, want permission denied", role, q, err)
		}
	}
}

// An agent reads the states and backups views with its own client and
// role: the documents assembled from parts read as they were written,
// while the tables of rows and parts stay closed to its writes, and the
// parts to its reads.
func TestStatePartsReadByTheAgentRole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPartsTask(t, 600)
	for i := 0; i < workspace.DefaultBackupsKeep+2; i++ {
		p.claimAndCommit()
	}
	agent, daemon := "agent_parts_read", "daemon_parts_read"
	if err := p.s.CreateRoles(ctx, agent, "", daemon, ""); err != nil {
		t.Fatal(err)
	}
	conn := agentConn(t, p.root, agent)
	sc := pgx.Identifier{p.s.Schema()}.Sanitize()
	rows, err := conn.Query(ctx, "SELECT journal_seq, doc FROM "+sc+".backups WHERE task_id = 't1' UNION ALL SELECT journal_seq, doc FROM "+sc+".states WHERE task_id = 't1'")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		var (
			seq int64
			doc string
		)
		if err := rows.Scan(&seq, &doc); err != nil {
			t.Fatal(err)
		}
		if want, ok := p.wrote[seq]; !ok || doc != want {
			t.Fatalf("the agent role reads %d bytes at journal_seq %d, other than the %d written", len(doc), seq, len(want))
		}
		n++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n != workspace.DefaultBackupsKeep+1 {
		t.Fatalf("the agent role read %d rows, want the state and %d backups", n, workspace.DefaultBackupsKeep)
	}
	mustBeRefused(t, conn, agent,
		"SELECT count(*) FROM "+sc+".state_parts",
		"UPDATE "+sc+".state_parts SET body = ''",
		"INSERT INTO "+sc+".state_parts (task_id, body) VALUES ('t1', '')",
		"DELETE FROM "+sc+".state_parts",
		"SELECT count(*) FROM "+sc+".state_rows",
		"UPDATE "+sc+".state_rows SET doc = '{}'",
		"DELETE FROM "+sc+".backup_rows",
		"INSERT INTO "+sc+".states (task_id, journal_seq, doc, epoch) VALUES ('t1', 0, '{}', 0)",
		"UPDATE "+sc+".states SET doc = '{}'",
		"DELETE FROM "+sc+".states",
		"UPDATE "+sc+".backups SET doc = '{}'",
		"DELETE FROM "+sc+".backups",
		"SELECT "+sc+".state_parts_settle('"+p.s.Schema()+"', 't1')",
	)
}

// A schema of the version before the parts, with roles granted then,
// migrates without a row rewritten: its states and backups read as they
// were, by the agent role too, which may write none of the new tables,
// while the daemon role may write them all.
func TestStatePartsMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := withSchema(t, pgtest.Shared(t).DB(t), "before_parts")
	ms, err := tables.Migrations(migrationFiles)
	if err != nil {
		t.Fatal(err)
	}
	connStr, _, err := ParseURL(root)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, connStr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	applied := 0
	stmts := []string{"CREATE SCHEMA before_parts", "SET search_path = before_parts",
		"CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"}
	for _, m := range ms {
		if m.Name == "state_parts" {
			break
		}
		stmts = append(stmts, m.SQL, fmt.Sprintf("INSERT INTO schema_migrations (version, name) VALUES (%d, '%s')", m.Version, m.Name))
		applied++
	}
	agent, daemon := "agent_parts_migration", "daemon_parts_migration"
	for _, r := range []string{agent, daemon} {
		stmts = append(stmts, "DO $$ BEGIN CREATE ROLE "+r+" LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$")
	}
	stmts = append(stmts, Grants("before_parts", agent, daemon)...)
	big := `{"big":"` + strings.Repeat("x", 100000) + `"}`
	stmts = append(stmts, `INSERT INTO tasks (id, created_at, doc) VALUES ('t1', now(), '{}')`,
		"INSERT INTO states (task_id, journal_seq, doc, epoch) VALUES ('t1', 3, '"+big+"', 0)",
		`INSERT INTO backups (task_id, journal_seq, doc, name) VALUES ('t1', 2, '{"b":2}', 'two')`)
	for _, q := range stmts {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	var before string
	if err := conn.QueryRow(ctx, "SELECT ctid::text FROM states").Scan(&before); err != nil {
		t.Fatal(err)
	}
	s, n, err := Init(ctx, root)
	if err != nil || n != len(ms)-applied {
		t.Fatalf("Init of the schema before the parts: %d migrations applied, %v", n, err)
	}
	defer s.Close()
	var after string
	if err := conn.QueryRow(ctx, "SELECT ctid::text FROM state_rows").Scan(&after); err != nil || after != before {
		t.Fatalf("the state row moved from %s to %s (%v): rewritten", before, after, err)
	}
	ac := agentConn(t, root, agent)
	var doc, bdoc, name string
	if err := ac.QueryRow(ctx, "SELECT s.doc, b.doc, b.name FROM before_parts.states s JOIN before_parts.backups b USING (task_id)").Scan(&doc, &bdoc, &name); err != nil ||
		doc != big || bdoc != `{"b":2}` || name != "two" {
		t.Fatalf("the agent role reads %d bytes, %q, %q (%v)", len(doc), bdoc, name, err)
	}
	mustBeRefused(t, ac, agent,
		"SELECT count(*) FROM before_parts.state_parts",
		"INSERT INTO before_parts.state_parts (task_id, body) VALUES ('t1', '')",
		"UPDATE before_parts.state_rows SET doc = '{}'",
		"DELETE FROM before_parts.backup_rows",
		"UPDATE before_parts.states SET doc = '{}'",
		"DELETE FROM before_parts.backups",
	)
	for _, q := range []string{
		"SELECT has_table_privilege($1, 'before_parts.state_parts', 'SELECT, INSERT, UPDATE, DELETE')",
		"SELECT has_table_privilege($1, 'before_parts.state_rows', 'SELECT, INSERT, UPDATE, DELETE')",
		"SELECT has_table_privilege($1, 'before_parts.backup_rows', 'SELECT, INSERT, UPDATE, DELETE')",
		"SELECT has_table_privilege($1, 'before_parts.states', 'SELECT, INSERT, UPDATE, DELETE')",
		"SELECT has_sequence_privilege($1, pg_get_serial_sequence('before_parts.state_parts', 'id'), 'USAGE')",
	} {
		var ok bool
		if err := conn.QueryRow(ctx, q, daemon).Scan(&ok); err != nil || !ok {
			t.Errorf("the daemon role: %s: %v, %v", q, ok, err)
		}
	}
}

// A read of the states or backups views that does not name doc (the
// wake-ups', a verdict's, a lock's look-up) does not join the parts: the
// planner removes the LATERAL join, which yields one row.
func TestStatePartsNotJoinedWithoutDoc(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	for _, q := range []string{
		"SELECT version, epoch, journal_seq FROM states WHERE task_id = 't1'",
		"SELECT t.id FROM tasks t WHERE NOT EXISTS (SELECT 1 FROM states s WHERE s.task_id = t.id)",
		"SELECT n, name FROM backups WHERE task_id = 't1'",
		"SELECT doc FROM states WHERE task_id = 't1'",
	} {
		rows, err := s.pool.Query(ctx, "EXPLAIN "+q)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		joined := strings.Contains(strings.Join(plan, "\n"), "state_parts")
		if want := strings.Contains(q, "doc"); joined != want {
			t.Errorf("%s: the plan joins state_parts: %v, want %v\n%s", q, joined, want, strings.Join(plan, "\n"))
		}
	}
}
