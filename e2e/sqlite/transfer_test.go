package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/internal/pgtest"
	"github.com/workspaced/workspaced/workspace/sqlite"
)

// richTree is the demo's workspace on files and what the demo leaves
// out: global, agent and session memory, a skill, an agent's token and a
// claim still waiting for a daemon.
func richTree(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tree")
	w := clitest.At(t, dir)
	if r := w.Run("demo", "--root", dir, "--agents", "3", "--time-scale", "0.01"); r.Code != 0 {
		t.Fatalf("demo: %v", r)
	}
	w.Ok("memory", "store", "--scope", "global", "--key", "style guide", "--description", "how we write", "--value", `{"tabs":false}`)
	w.Ok("memory", "store", "--scope", "agent", "--agent", "solver", "--key", "notes", "--description", "what I saw", "--value", `["a","b"]`)
	w.Ok("memory", "store", "--scope", "session", "--thread", "th_solver", "--key", "scratch", "--description", "draft", "--value", `{"n":1}`)
	w.Ok("memory", "update", "--scope", "global", "--key", "style guide", "--value", `{"tabs":true}`)
	if r := w.RunIn("Check the grid twice.\n", "skill", "add", "--name", "grids", "--file", "-", "--description", "reading ARC grids", "--tags", "arc"); r.Code != 0 {
		t.Fatalf("skill add: %v", r)
	}
	if r := w.Run("token", "add", "--agent", "remote", "--all-tasks"); r.Code != 0 || !strings.HasPrefix(r.Stdout, "wsd_") {
		t.Fatalf("token add: %v", r)
	}
	w.Ok("claim", "--task", "arc_training_001", "--agent", "late", "--subtask", "st_1")
	return dir
}

// TestTransferTreeSQLiteTree: a file workspace → `import` into a new
// SQLite file → `export` is the same tree byte for byte, every kind of
// file included; the SQLite workspace reads as the tree did.
func TestTransferTreeSQLiteTree(t *testing.T) {
	t.Parallel()
	src := richTree(t)
	db := filepath.Join(t.TempDir(), "moved.db")
	w := clitest.At(t, "sqlite:"+db)
	if out := w.Ok("import", "--from", src); !strings.Contains(out, "imported 2 tasks") || !strings.Contains(out, db) {
		t.Fatalf("import printed %q", out)
	}
	out := filepath.Join(t.TempDir(), "out")
	if got := w.Ok("export", "--to", out); !strings.Contains(got, "exported 2 tasks") {
		t.Fatalf("export printed %q", got)
	}
	want := clitest.HistoryFiles(t, src)
	for _, must := range []string{"workspace.json", ".gitignore", "config/agents.json", "config/tokens.json", "friction/friction.json",
		"skills/grids.md", "memory/global/style%20guide.json", "memory/agents/solver/notes.json",
		"tasks/arc_training_001/sessions/th_solver/scratch.json", "tasks/arc_training_001/env/arc_task.json",
		"tasks/arc_training_001/threads/th_solver.json", "tasks/auth_api/task.json", "tasks/auth_api/state.json",
		"tasks/auth_api/events.log", "tasks/auth_api/plans/plan_v1.json", "tasks/auth_api/outputs/history/st_4.v1.json"} {
		if _, ok := want[must]; !ok {
			t.Errorf("the source tree lacks %s: the test no longer covers it", must)
		}
	}
	var journals, backups, markers int
	for p := range want {
		journals += strings.Count(p, "/journal/")
		backups += strings.Count(p, "/backups/")
		if strings.Contains(p, "/.claim.") {
			markers++
		}
	}
	if journals < 2 || backups < 2 || markers != 1 {
		t.Fatalf("%d journal files, %d backups, %d markers: the source should have several, several and one", journals, backups, markers)
	}
	clitest.SameFiles(t, "tree → SQLite → tree", want, clitest.HistoryFiles(t, out))
	if fi, err := os.Stat(filepath.Join(out, "config", "tokens.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("exported tokens file: %v %v, want mode 0600", fi, err)
	}
	t.Logf("%d files compared (%d journal files, %d backups)", len(want), journals, backups)

	// The SQLite workspace is the tree's: its tasks, state and memory.
	if list := w.Ok("task", "list"); !strings.Contains(list, "auth_api") || !strings.Contains(list, "completed") {
		t.Errorf("task list of the imported workspace:\n%s", list)
	}
	var state struct {
		JournalSeq int64 `json:"journal_seq"`
	}
	clitest.Decode(t, w.Ok("state", "show", "--task", "auth_api", "--json"), &state)
	if state.JournalSeq < 10 {
		t.Errorf("auth_api's imported state has journal_seq %d", state.JournalSeq)
	}
	if got := w.Ok("memory", "get", "--scope", "global", "--key", "style guide"); !strings.Contains(got, `"tabs": true`) {
		t.Errorf("global memory of the imported workspace: %s", got)
	}
}

// pgRoot is a fresh PostgreSQL schema's root, initialized.
func pgRoot(t *testing.T) string {
	t.Helper()
	root := pgtest.Schema(t)
	clitest.New(t, root)
	return root
}

// export writes w's workspace into a new directory and reads its files.
func export(t *testing.T, w *clitest.WS) map[string][]byte {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "export")
	w.Ok("export", "--to", dir)
	return clitest.HistoryFiles(t, dir)
}

// settle runs a daemon on w until a claim on a new task has its verdict,
// so that the workspace holds a journal, state, backups and events its
// own daemon wrote, beside what was imported.
func settle(t *testing.T, w *clitest.WS, task string) {
	t.Helper()
	w.Task(task)
	d := w.Serve()
	// On PostgreSQL Serve returns before the daemon has its lease, and a
	// claim --wait refuses to wait while no daemon serves.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r := w.Run("claim", "--task", task, "--agent", "a1", "--subtask", "s1", "--wait", "30s")
		if r.Code == 4 {
			break
		}
		if !strings.Contains(r.Stderr, "no daemon serves") || time.Now().After(deadline) {
			t.Fatalf("claim --wait on %s: %v\ndaemon: %s", w.Root, r, d.Log)
		}
	}
	if r := w.Run("claim", "--task", "arc_training_001", "--agent", "late2", "--subtask", "st_1", "--wait", "30s"); r.Code != 4 {
		t.Fatalf("claim --wait on %s: %v", w.Root, r)
	}
	d.Kill()
}

// TestTransferSQLitePostgres: SQLite → PostgreSQL → SQLite keeps the
// same tree, and so does PostgreSQL → SQLite → PostgreSQL, each side
// holding history its own daemon wrote (journal chunks, backups named by
// their time) beside history imported from files.
func TestTransferSQLitePostgres(t *testing.T) {
	t.Parallel()
	src := richTree(t)
	a := clitest.At(t, "sqlite:"+filepath.Join(t.TempDir(), "a.db"))
	a.Ok("import", "--from", src)
	settle(t, a, "on_sqlite")
	wantA := export(t, a)

	p := clitest.At(t, pgRoot(t))
	if out := p.Ok("import", "--from", a.Root); !strings.Contains(out, "imported 3 tasks") {
		t.Fatalf("import from sqlite: printed %q", out)
	}
	clitest.SameFiles(t, "SQLite → PostgreSQL", wantA, export(t, p))
	b := clitest.At(t, "sqlite:"+filepath.Join(t.TempDir(), "b.db"))
	b.Ok("import", "--from", p.Root)
	clitest.SameFiles(t, "SQLite → PostgreSQL → SQLite", wantA, export(t, b))

	// The reverse, from a schema its own daemon wrote to.
	settle(t, p, "on_postgres")
	wantP := export(t, p)
	if len(wantP) <= len(wantA) {
		t.Fatalf("the PostgreSQL daemon added no file (%d, %d)", len(wantP), len(wantA))
	}
	c := clitest.At(t, "sqlite:"+filepath.Join(t.TempDir(), "c.db"))
	c.Ok("import", "--from", p.Root)
	clitest.SameFiles(t, "PostgreSQL → SQLite", wantP, export(t, c))
	q := clitest.At(t, pgRoot(t))
	q.Ok("import", "--from", c.Root)
	clitest.SameFiles(t, "PostgreSQL → SQLite → PostgreSQL", wantP, export(t, q))
	t.Logf("%d and %d files compared", len(wantA), len(wantP))
}

// TestTransferRefusals: each refusal exits as the help says, names the
// fix, and leaves nothing behind.
func TestTransferRefusals(t *testing.T) {
	t.Parallel()
	src := richTree(t)
	w, _ := clitest.NewSQLite(t)
	w.Task("t1")
	// Into a database holding a workspace: refused, then --replace.
	w.Fails(4, "--replace", "import", "--from", src)
	if out := w.Ok("import", "--from", src, "--replace"); !strings.Contains(out, "imported 2 tasks") {
		t.Fatalf("import --replace printed %q", out)
	}
	if list := w.Ok("task", "list"); strings.Contains(list, "t1") {
		t.Errorf("--replace kept the task that was there:\n%s", list)
	}
	// Into a directory holding something.
	w.Fails(4, "not empty", "export", "--to", src)
	// From a file that is no workspace, a directory that is none.
	tmp := t.TempDir()
	w.Fails(3, "init", "export", "--from", "sqlite:"+filepath.Join(tmp, "none.db"), "--to", filepath.Join(tmp, "o1"))
	w.Fails(3, "--from ROOT", "import", "--from", filepath.Join(tmp, "nothing"), "--to", "sqlite:"+filepath.Join(tmp, "n.db"))
	if _, err := os.Stat(filepath.Join(tmp, "n.db")); !os.IsNotExist(err) {
		t.Errorf("a refused import left its database file: %v", err)
	}
	// A tree that cannot be kept byte for byte: refused, and the file the
	// import would have created is not left behind.
	bad := t.TempDir()
	clitest.At(t, bad).Ok("init")
	if err := os.MkdirAll(filepath.Join(bad, "tasks", "t1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "tasks", "t1", "events.log"), []byte("2024-01-01T00:00:00Z task_created t1"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.Fails(1, "torn", "import", "--from", bad, "--to", "sqlite:"+filepath.Join(tmp, "bad.db"))
	if _, err := os.Stat(filepath.Join(tmp, "bad.db")); !os.IsNotExist(err) {
		t.Errorf("a refused import left its database file: %v", err)
	}
	// Usage: --to a directory, export --to a database, the same root twice.
	w.Fails(2, "sqlite:PATH", "import", "--from", src, "--to", filepath.Join(tmp, "dir"))
	w.Fails(2, "workspaced import", "export", "--to", "sqlite:"+filepath.Join(tmp, "x.db"))
	w.Fails(2, "same workspace", "import", "--from", w.Root, "--to", w.Root)

	// A database a newer workspaced migrated: refused both ways.
	migratedByNewer(t, w.Root)
	w.Fails(1, "newer", "export", "--to", filepath.Join(tmp, "o2"))
	w.Fails(1, "newer", "import", "--from", src, "--replace")
	if _, err := os.Stat(filepath.Join(tmp, "o2")); !os.IsNotExist(err) {
		t.Errorf("a refused export made its directory: %v", err)
	}
}

// migratedByNewer records in root's database a migration this build does
// not know, as a newer workspaced would have left it.
func migratedByNewer(t *testing.T, root string) {
	t.Helper()
	s, err := sqlite.Open(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.DB().Exec("INSERT INTO schema_migrations (version, name) VALUES (999, 'future')")
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
}
