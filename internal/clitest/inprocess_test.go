package clitest

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	_ "github.com/workspaced/workspaced/internal/raceexit"
)

// TestInProcess: a command runs in-process only where nothing tells it
// from the binary, and then with the root of WORKSPACE_ROOT.
func TestInProcess(t *testing.T) {
	saved := inProcess
	inProcess = func(context.Context, []string, io.Reader, io.Writer, io.Writer) int { return 0 }
	t.Cleanup(func() { inProcess = saved })
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "here"), 0o755); err != nil {
		t.Fatal(err)
	}
	abs := filepath.Join(dir, "workspace")
	env := func(extra ...string) []string { return append(CleanEnv(), extra...) }
	for _, tc := range []struct {
		name string
		root string // WORKSPACE_ROOT, "" for none
		env  []string
		args []string
		want bool
	}{
		{"a command on an absolute root", abs, nil, []string{"task", "list"}, true},
		{"a sqlite: root of an absolute path", "sqlite:" + abs + ".db", nil, []string{"status"}, true},
		{"a postgres:// root", "postgres://u@h/db?schema=s", nil, []string{"status"}, true},
		{"a relative root", "workspace", nil, []string{"status"}, false},
		{"a sqlite: root of a relative path", "sqlite:agents.db", nil, []string{"status"}, false},
		{"serve", abs, nil, []string{"serve"}, false},
		{"serve --help", abs, nil, []string{"serve", "--help"}, true},
		{"lock with a child's -h", abs, nil, []string{"lock", "--task", "t1", "--", "ls", "-h"}, false},
		{"demo after a global --root", "", nil, []string{"--root", abs, "demo"}, false},
		{"a relative --root", abs, nil, []string{"--root", "ws2", "init"}, false},
		{"a relative --file", abs, nil, []string{"plan", "write", "--task", "t1", "--file", "plan.json"}, false},
		{"--file -", abs, nil, []string{"plan", "write", "--task", "t1", "--file", "-"}, true},
		{"a path into the working directory", abs, nil, []string{"validate", "here/x.json"}, false},
		{"an agent set in the environment", abs, []string{"WORKSPACE_AGENT=w1"}, []string{"task", "list"}, false},
		{"an agent set empty", abs, []string{"WORKSPACE_AGENT="}, []string{"task", "list"}, true},
		{"another variable", abs, []string{"NOTIFY_SOCKET=/x"}, []string{"task", "list"}, false},
		{"no root, help", "", nil, []string{"help"}, true},
		{"no root, a command that reads one", "", nil, []string{"task", "list"}, false},
		{"thread new's agents", abs, nil, []string{"thread", "new", "--task", "t1", "--from", "a", "--to", "b"}, true},
		{"export to a relative directory", abs, nil, []string{"export", "--to", "out"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &WS{T: t, Dir: dir, Env: env(tc.env...)}
			if tc.root != "" {
				w.Env = append(w.Env, "WORKSPACE_ROOT="+tc.root)
			}
			root, ok := w.InProcess(tc.args)
			if ok != tc.want || ok && root != tc.root {
				t.Errorf("InProcess(%q) = %q, %v; want %v with root %q", tc.args, root, ok, tc.want, tc.root)
			}
			w.Process = true
			if _, ok := w.InProcess(tc.args); ok {
				t.Errorf("InProcess(%q) with Process set: true", tc.args)
			}
		})
	}
}
