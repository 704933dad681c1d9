package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/demo"
	"github.com/workspaced/workspaced/internal/pgtest"
	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"
	"github.com/workspaced/workspaced/workspace/postgres"
	"github.com/workspaced/workspaced/workspace/tables"
)

// The demo's round trip is an external test: the demo opens its tree
// through the operations layer, which imports this package.

// tree reads every file under dir that is history (no locks, no
// temporary files) by its slash path, and every directory.
func tree(t *testing.T, dir string) (files map[string][]byte, dirs map[string]bool) {
	t.Helper()
	files, dirs = map[string][]byte{}, map[string]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if rel != "." && tables.NotHistory(d.Name()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			dirs[rel] = true
			return nil
		}
		b, err := os.ReadFile(p)
		files[rel] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files, dirs
}

// TestTransferRoundTrip: the demo's workspace, made by the file backend
// and its daemon, imported into PostgreSQL and exported again is the same
// tree byte for byte: every file (state, journal, backups, events,
// friction, entries, threads, products, plan versions, output history)
// and every directory.
func TestTransferRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "run")
	if _, err := demo.Run(ctx, demo.Config{Root: src, Agents: 3, TimeScale: 0.01, Out: io.Discard}); err != nil {
		t.Fatalf("demo: %v", err)
	}
	// The agents' tokens go to the tokens table, not to the files the
	// agent role may read, and come back as the same private file.
	srcWS, err := files.Open(src, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := tokens.Add(ctx, tokens.Tree(srcWS), tokens.Grant{Agent: "remote", Tasks: []string{tokens.AllTasks}})
	srcWS.Close()
	if err != nil {
		t.Fatal(err)
	}
	root := pgtest.Schema(t)
	s, _, err := postgres.Init(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rep, err := s.Import(ctx, src, postgres.ImportOptions{})
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	if g, err := s.Tokens().Lookup(tok); err != nil || g.Agent != "remote" {
		t.Fatalf("the imported token: %+v %v", g, err)
	}
	var inFiles bool
	if err := s.Pool().QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM files WHERE path LIKE 'config/tokens%')").Scan(&inFiles); err != nil || inFiles {
		t.Fatalf("the agents file is among the files agents read: %v %v", inFiles, err)
	}
	if rep.Tasks != 2 {
		t.Errorf("imported %d tasks, want the demo's 2", rep.Tasks)
	}
	dst := filepath.Join(t.TempDir(), "out")
	if _, err := s.Export(ctx, dst); err != nil {
		t.Fatalf("export: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(dst, "config", "tokens.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("exported agents file: %v %v, want mode 0600", fi, err)
	}
	want, wantDirs := tree(t, src)
	got, gotDirs := tree(t, dst)
	for _, must := range []string{"workspace.json", "friction/friction.json", "config/agents.json", "tasks/auth_api/state.json",
		"tasks/auth_api/events.log", "tasks/auth_api/outputs/history/st_4.v1.json", "tasks/auth_api/plans/plan_v1.json",
		"tasks/arc_training_001/env/arc_task.json", "tasks/arc_training_001/threads/th_solver.json"} {
		if _, ok := want[must]; !ok {
			t.Errorf("the demo's tree lacks %s: the test no longer covers it", must)
		}
	}
	var journals, backups int
	for p, b := range want {
		if strings.Contains(p, "/journal/") {
			journals++
		}
		if strings.Contains(p, "/backups/") {
			backups++
		}
		if g, ok := got[p]; !ok {
			t.Errorf("export lacks %s", p)
		} else if !bytes.Equal(g, b) {
			t.Errorf("%s differs:\n--- file backend\n%s\n--- export\n%s", p, b, g)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("export has %s, the file backend has not", p)
		}
	}
	for d := range wantDirs {
		if !gotDirs[d] {
			t.Errorf("export lacks directory %s", d)
		}
	}
	for d := range gotDirs {
		if !wantDirs[d] {
			t.Errorf("export has directory %s, the file backend has not", d)
		}
	}
	if journals < 2 || backups < 2 {
		t.Errorf("%d journal files, %d backups: the demo should give several of each", journals, backups)
	}
	t.Logf("%d files, %d journal files, %d backups compared", len(want), journals, backups)

	// The imported state is the one the store reads.
	var seq int64
	if err := s.Pool().QueryRow(ctx, "SELECT max(seq) FROM journal WHERE task_id = 'auth_api'").Scan(&seq); err != nil || seq < 10 {
		t.Errorf("journal of auth_api: max seq %d, %v", seq, err)
	}

	// Again into the same schema: refused, nothing changed.
	if _, err := s.Import(ctx, src, postgres.ImportOptions{}); !errors.Is(err, workspace.ErrConflict) {
		t.Errorf("import into a schema holding a workspace: got %v, want conflict", err)
	}
	if _, err := s.Import(ctx, src, postgres.ImportOptions{Replace: true}); err != nil {
		t.Errorf("import --replace: %v", err)
	}
	// Export into a directory holding something: refused.
	if _, err := s.Export(ctx, src); !errors.Is(err, workspace.ErrConflict) {
		t.Errorf("export into a non-empty directory: got %v, want conflict", err)
	}
}
