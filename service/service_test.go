package service_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/pgtest"
	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// root is a workspace of kind made for t: a directory, a sqlite: file in
// t.TempDir(), or a PostgreSQL schema of its own.
func root(t testing.TB, kind service.Kind) string {
	t.Helper()
	var r string
	switch kind {
	case service.Files:
		r = filepath.Join(t.TempDir(), "ws")
	case service.SQLite:
		r = "sqlite:" + filepath.Join(t.TempDir(), "ws.db")
	case service.PostgreSQL:
		r = pgtest.Schema(t)
	}
	if _, err := service.Init(context.Background(), r, service.Roles{}); err != nil {
		t.Fatalf("init %s: %v", r, err)
	}
	return r
}

var kinds = []struct {
	name  string
	kind  service.Kind
	where string // how Where begins
}{
	{"files", service.Files, "root /"},
	{"sqlite", service.SQLite, "SQLite database /"},
	{"postgres", service.PostgreSQL, "PostgreSQL schema "},
}

// TestOpen: every kind of root opens as a workspace.Store that works
// (a task created and read back), is named for messages, keeps tokens and
// can be served; only a directory hands out its tree.
func TestOpen(t *testing.T) {
	t.Parallel()
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			ctx := t.Context()
			r := root(t, k.kind)
			if got := service.KindOf(r); got != k.kind {
				t.Fatalf("KindOf(%s) = %v, want %v", r, got, k.kind)
			}
			if got := service.HasPaths(r); got != (k.kind == service.Files) {
				t.Errorf("HasPaths(%s) = %v", r, got)
			}
			st, err := service.Open(ctx, r, service.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if _, err := st.CreateTask(ctx, workspace.NewTaskRequest{ID: "t1", Description: "open"}); err != nil {
				t.Fatal(err)
			}
			if got, err := st.GetTask(ctx, "t1"); err != nil || got.Description != "open" {
				t.Fatalf("GetTask = %+v, %v", got, err)
			}
			if w := service.Where(st); !strings.HasPrefix(w, k.where) {
				t.Errorf("Where = %q, want it to begin %q", w, k.where)
			}
			if _, err := service.Tokens("token list", st); err != nil {
				t.Errorf("Tokens: %v", err)
			}
			if _, _, err := service.Serve(st, "", 0); err != nil {
				t.Errorf("Serve: %v", err)
			}
			if _, err := service.Watched(st); err != nil {
				t.Errorf("Watched: %v", err)
			}
			if _, err := service.Verdicts("done --wait", st); err != nil {
				t.Errorf("Verdicts: %v", err)
			}
			tree, err := service.Tree("locks", st)
			if k.kind == service.Files {
				if err != nil || tree == nil {
					t.Fatalf("Tree = %v, %v", tree, err)
				}
				return
			}
			if !errors.Is(err, workspace.ErrInvalid) || !strings.Contains(err.Error(), "locks: works on a workspace kept as files only") ||
				!strings.Contains(workspace.HintOf(err), "'workspaced export --from ROOT --to DIR'") {
				t.Errorf("Tree on %s = %v (hint %q), want the files-only refusal", k.name, err, workspace.HintOf(err))
			}
			if _, err := service.OpenTree(r, "state rebuild"); !errors.Is(err, workspace.ErrInvalid) ||
				!strings.Contains(err.Error(), "state rebuild: works on a workspace kept as files only, and this root is a database") {
				t.Errorf("OpenTree on %s = %v", k.name, err)
			}
		})
	}
}

// TestOpenRefuses: roots that name no workspace are refused with the
// error kind and the hint a door prints, and nothing is written at them.
func TestOpenRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notWS := filepath.Join(dir, "plain")
	if err := os.MkdirAll(filepath.Join(notWS, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	aFile := filepath.Join(dir, "file")
	if err := os.WriteFile(aFile, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, root string
		kind       error
		msg, hint  string
	}{
		{"missing directory", filepath.Join(dir, "nowhere"), workspace.ErrNotFound, "",
			"create one with 'workspaced init', or point at one with --root DIR or WORKSPACE_ROOT"},
		{"not a workspace", notWS, workspace.ErrNotFound, "the directory holds neither workspace.json nor tasks/",
			"create one with 'workspaced init', or point at one with --root DIR or WORKSPACE_ROOT"},
		{"a file", aFile, nil, "", ""},
		{"sqlite without a path", "sqlite:", workspace.ErrInvalid, "not a sqlite: root naming a file",
			"name the database as sqlite:./agents.db or sqlite:///var/lib/agents.db"},
		{"sqlite file missing", "sqlite:" + filepath.Join(dir, "none.db"), workspace.ErrNotFound, "no workspace",
			"create it with workspaced --root 'sqlite:" + filepath.Join(dir, "none.db") + "' init"},
		{"postgres bad URL", "postgres://h/db?schema=1bad", workspace.ErrInvalid, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, err := service.Open(t.Context(), c.root, service.Options{})
			if err == nil {
				st.Close()
				t.Fatalf("Open(%s) opened", c.root)
			}
			if c.kind != nil && !errors.Is(err, c.kind) {
				t.Errorf("Open(%s) = %v, want %v", c.root, err, c.kind)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("Open(%s) = %v, want it to say %q", c.root, err, c.msg)
			}
			if c.hint != "" && workspace.HintOf(err) != c.hint {
				t.Errorf("hint = %q, want %q", workspace.HintOf(err), c.hint)
			}
		})
	}
	if ents, err := os.ReadDir(notWS); err != nil || len(ents) != 1 {
		t.Errorf("a refused directory was written to: %v, %v", ents, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "none.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused sqlite: root was created: %v", err)
	}
}

// TestName: a PostgreSQL URL is printed with its password masked; other
// roots as given.
func TestName(t *testing.T) {
	t.Parallel()
	for root, want := range map[string]string{
		"postgres://u:secret@db/agents?schema=a": "postgres://u:xxxxx@db/agents?schema=a",
		"sqlite:./agents.db":                     "sqlite:./agents.db",
		"./ws":                                   "./ws",
	} {
		if got := service.Name(root); got != want {
			t.Errorf("Name(%q) = %q, want %q", root, got, want)
		}
	}
}
