package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/workspace/files"
)

// errorCase is one way a command fails, as a user meets it.
type errorCase struct {
	name  string
	setup func(t *testing.T, w *ws) // optional, on the case's own workspace when fresh is set
	fresh bool                      // run on a workspace of its own (setup breaks something)
	stdin string
	args  []string
	code  int
	want  string // part of the error line
	noFix string // why no hint is expected; "" means one must be printed
}

// writeFile writes data at rel under the root.
func (w *ws) writeFile(rel, data string) {
	w.T.Helper()
	p := filepath.Join(w.Root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		w.T.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		w.T.Fatal(err)
	}
}

// TestEveryErrorHasAHint walks the ways each command fails — usage
// mistakes, things not found, conflicts, refused input, broken files, a
// daemon already serving, a lock held — and checks each prints one
// "workspaced: " line saying what failed, exits with its code, and, where
// the fix is known, a "hint: " line saying it. Usage errors (2), things
// not found (3) and conflicts (4) always have a known fix.
func TestEveryErrorHasAHint(t *testing.T) {
	t.Parallel()
	big := `"` + strings.Repeat("x", 1<<20) + `"`
	cases := []errorCase{
		// Usage (2).
		{name: "unknown command", args: []string{"frobnicate"}, code: 2, want: "unknown command"},
		{name: "unknown subcommand", args: []string{"env", "fetch"}, code: 2, want: "unknown subcommand"},
		{name: "missing subcommand", args: []string{"task"}, code: 2, want: "missing subcommand"},
		{name: "unknown flag", args: []string{"env", "get", "--vlaue", "1"}, code: 2, want: "unknown flag --vlaue"},
		{name: "unknown top-level flag", args: []string{"--nope", "status"}, code: 2, want: "unknown flag --nope"},
		{name: "flag without value", args: []string{"env", "get", "--task"}, code: 2, want: "--task needs ID"},
		{name: "bad number", args: []string{"env", "update", "--task", "t1", "--key", "k", "--value", "1", "--if-version", "one"}, code: 2, want: "invalid value"},
		{name: "bad duration", args: []string{"serve", "--grace", "5"}, code: 2, want: "invalid value"},
		{name: "missing flag", args: []string{"env", "get", "--task", "t1"}, code: 2, want: "missing --key"},
		{name: "missing task", args: []string{"claim", "--agent", "a", "--subtask", "s"}, code: 2, want: "missing --task T or --thread X"},
		{name: "unexpected argument", args: []string{"status", "now"}, code: 2, want: "unexpected argument"},
		{name: "value and value-file", args: []string{"env", "store", "--task", "t1", "--key", "k", "--description", "d", "--value", "1", "--value-file", "-"}, code: 2, want: "not both"},
		{name: "memory without scope", args: []string{"memory", "list"}, code: 2, want: "missing --scope"},
		{name: "memory unknown scope", args: []string{"memory", "list", "--scope", "world"}, code: 2, want: "scope"},
		{name: "done bad status", args: []string{"done", "--task", "t1", "--agent", "a", "--output", "plan.json", "--status", "meh"}, code: 2, want: "--status must be"},
		{name: "events bad time", args: []string{"events", "--since", "yesterday"}, code: 2, want: "RFC 3339"},
		{name: "preamble bad detail", args: []string{"preamble", "--thread", "t1", "--detail", "huge"}, code: 2, want: "--detail"},
		{name: "context bad budget", args: []string{"context", "--thread", "t1", "--budget", "-5"}, code: 2, want: "--budget"},
		{name: "serve bad log level", args: []string{"serve", "--log-level", "loud"}, code: 2, want: "--log-level"},
		{name: "cleanup nonsensical policy", args: []string{"cleanup", "--full-days", "10", "--summary-days", "5"}, code: 2, want: "invalid retention policy"},
		{name: "lock without command", args: []string{"lock", "--task", "t1", "--name", "n"}, code: 2, want: "missing the command"},
		{name: "schema without kind", args: []string{"schema"}, code: 2, want: "KIND"},
		{name: "completion without shell", args: []string{"completion"}, code: 2, want: "name one shell"},
		{name: "demo bad agents", args: []string{"demo", "--agents", "0"}, code: 2, want: "--agents"},

		// Not found (3).
		{name: "no workspace", fresh: true, setup: func(t *testing.T, w *ws) { os.RemoveAll(w.Root) }, args: []string{"task", "list"}, code: 3, want: "no workspace here"},
		{name: "not a workspace", args: []string{"--root", "/", "status"}, code: 3, want: "neither workspace.json nor tasks/"},
		{name: "no such task", args: []string{"task", "show", "--task", "nope"}, code: 3, want: "no such task"},
		{name: "no such thread", args: []string{"thread", "show", "--thread", "th_nope"}, code: 3, want: "no task holds this thread"},
		{name: "thread of another task", args: []string{"env", "list", "--task", "t2", "--thread", "th_a"}, code: 3, want: "no such thread"},
		{name: "get missing key", args: []string{"env", "get", "--task", "t1", "--key", "nope"}, code: 3, want: "no such key"},
		{name: "update missing key", args: []string{"env", "update", "--task", "t1", "--key", "nope", "--value", "1"}, code: 3, want: "no such key"},
		{name: "delete missing key", args: []string{"env", "delete", "--task", "t1", "--key", "nope"}, code: 3, want: "no such key"},
		{name: "memory missing key", args: []string{"memory", "get", "--scope", "global", "--key", "nope"}, code: 3, want: "no such key"},
		{name: "no state yet", args: []string{"state", "show", "--task", "t1"}, code: 3, want: "no state.json yet"},
		{name: "no valid backup", args: []string{"backup", "restore", "--task", "t1"}, code: 3, want: "no valid backup"},
		{name: "no such friction entry", args: []string{"friction", "show", "friction_999"}, code: 3, want: "not found"},
		{name: "resolve missing friction entry", args: []string{"friction", "resolve", "friction_999", "--status", "applied"}, code: 3, want: "not found"},
		{name: "unknown schema kind", args: []string{"schema", "nope"}, code: 3, want: "unknown file kind"},
		{name: "validate missing path", args: []string{"validate", "nope.json"}, code: 3, want: "no such file"},
		{name: "validate outside a workspace", args: []string{"validate", "/"}, code: 3, want: "not inside a workspace"},
		{name: "done missing product", args: []string{"done", "--task", "t1", "--agent", "a", "--output", "outputs/st_9.json"}, code: 3, want: "does not exist"},
		{name: "claim in no task", args: []string{"claim", "--task", "nope", "--agent", "a", "--subtask", "s"}, code: 3, want: "no such task"},
		{name: "context of no thread", args: []string{"context", "--thread", "th_nope"}, code: 3, want: "no task holds this thread"},
		{name: "events of no task", args: []string{"events", "--task", "nope"}, code: 3, want: "no such task"},
		{name: "mcp of no task", args: []string{"mcp", "--task", "nope", "--agent", "a"}, code: 3, want: "no such task"},
		{name: "parent thread missing", args: []string{"thread", "new", "--task", "t1", "--parent", "th_zz", "--from", "a", "--to", "b", "--message", "m"}, code: 3, want: "no such thread"},

		// Conflict (4).
		{name: "task exists", args: []string{"task", "create", "--id", "t1", "--description", "again"}, code: 4, want: "a task with this id exists"},
		{name: "thread exists", args: []string{"thread", "new", "--task", "t1", "--id", "th_a", "--from", "a", "--to", "b", "--message", "m"}, code: 4, want: "a thread with this id exists"},
		{name: "version mismatch", args: []string{"env", "update", "--task", "t1", "--key", "k", "--value", "2", "--if-version", "9"}, code: 4, want: "not 9"},
		{name: "lock held", fresh: true, setup: holdLock("tasks/t1/.locks/n.lock"), args: []string{"lock", "--task", "t1", "--name", "n", "--timeout", "100ms", "--", "true"}, code: 4, want: "held by"},
		{name: "entry lock held", fresh: true, setup: holdLock("tasks/t1/env/.locks/k.json.lock"), args: []string{"env", "update", "--task", "t1", "--key", "k", "--value", "2"}, code: 4, want: "held by"},
		{name: "demo root in use", args: []string{"demo", "--root", "."}, code: 4, want: "not empty"},
		{name: "second serve", fresh: true, setup: serving, args: []string{"serve"}, code: 4, want: "is serving"},
		{name: "restore while serving", fresh: true, setup: serving, args: []string{"backup", "restore", "--task", "t1"}, code: 4, want: "is serving"},

		// Refused input and broken files (1).
		{name: "bad task id", args: []string{"task", "create", "--id", "a/b", "--description", "x"}, code: 1, want: "not a valid id"},
		{name: "bad agent", args: []string{"claim", "--task", "t1", "--agent", "a b", "--subtask", "s"}, code: 1, want: "not a valid id"},
		{name: "empty description", args: []string{"task", "create", "--description", "  "}, code: 1, want: "description is empty"},
		{name: "key with a control byte", args: []string{"env", "store", "--task", "t1", "--key", "a\x01", "--description", "d", "--value", "1"}, code: 1, want: "control character"},
		{name: "key too long", args: []string{"env", "store", "--task", "t1", "--key", strings.Repeat("k", 300), "--description", "d", "--value", "1"}, code: 1, want: "300 bytes"},
		{name: "value not JSON", args: []string{"env", "store", "--task", "t1", "--key", "k2", "--description", "d", "--value", "{"}, code: 1, want: "not valid JSON"},
		{name: "value over the limit", stdin: big, args: []string{"env", "store", "--task", "t1", "--key", "k2", "--description", "d", "--value-file", "-"}, code: 1, want: "limit"},
		{name: "value-file missing", args: []string{"env", "store", "--task", "t1", "--key", "k2", "--description", "d", "--value-file", "nope.json"}, code: 1, want: "no such file"},
		{name: "value-file a directory", args: []string{"env", "store", "--task", "t1", "--key", "k2", "--description", "d", "--value-file", "/"}, code: 1, want: "is a directory"},
		{name: "plan file missing", args: []string{"plan", "write", "--task", "t1", "--file", "nope.json"}, code: 1, want: "no such file"},
		{name: "plan not JSON", stdin: `{"subtasks":[`, args: []string{"plan", "write", "--task", "t1", "--file", "-"}, code: 1, want: "plan"},
		{name: "plan schema-invalid", stdin: `{"subtasks":[{"id":"st_1"}]}`, args: []string{"plan", "write", "--task", "t1", "--file", "-"}, code: 1, want: "/subtasks/0"},
		{name: "output schema-invalid", stdin: `{"summary":3}`, args: []string{"output", "write", "--task", "t1", "--subtask", "st_1", "--agent", "w", "--file", "-"}, code: 1, want: "/summary"},
		{name: "review schema-invalid", stdin: `{"type":"plan_review","verdict":"maybe"}`, args: []string{"review", "write", "--task", "t1", "--id", "r1", "--file", "-"}, code: 1, want: "/verdict"},
		{name: "thread status invalid", args: []string{"thread", "update", "--thread", "th_a", "--status", "sleeping"}, code: 1, want: "/status"},
		{name: "done outside the task", args: []string{"done", "--task", "t1", "--agent", "a", "--output", "../../etc/passwd"}, code: 1, want: "is not plan.json"},
		{name: "failed without error", args: []string{"done", "--task", "t1", "--agent", "a", "--output", "plan.json", "--status", "failed"}, code: 1, want: "needs an error"},
		{name: "friction unknown type", args: []string{"friction", "add", "--type", "nope", "--description", "d"}, code: 1, want: "type \"nope\""},
		{name: "friction empty description", args: []string{"friction", "add", "--type", "timeout", "--description", " "}, code: 1, want: "empty description"},
		{name: "friction log corrupt", fresh: true, setup: func(t *testing.T, w *ws) { w.writeFile("friction/friction.json", "garbage") }, args: []string{"friction", "list"}, code: 1, want: "friction log is invalid"},
		{name: "state corrupt", fresh: true, setup: func(t *testing.T, w *ws) { w.writeFile("tasks/t1/state.json", "{") }, args: []string{"state", "show", "--task", "t1"}, code: 1, want: "invalid JSON"},
		{name: "workspace.json corrupt", fresh: true, setup: func(t *testing.T, w *ws) { w.writeFile("workspace.json", "{bad") }, args: []string{"task", "list"}, code: 1, want: "workspace.json"},
		{name: "init under a file", fresh: true, setup: func(t *testing.T, w *ws) { os.WriteFile(filepath.Join(w.Dir, "afile"), nil, 0o644) }, args: []string{"--root", "afile/ws", "init"}, code: 1, want: "not a directory"},
		{name: "lock command not found", args: []string{"lock", "--task", "t1", "--name", "n", "--", "/nonexistent/cmd"}, code: 127, want: "lock: run /nonexistent/cmd"},
	}

	shared := errorWS(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.noFix != "" && c.code >= 2 && c.code <= 4 {
				t.Fatalf("exit %d always has a known fix, yet the case says %q", c.code, c.noFix)
			}
			w := shared
			if c.fresh {
				w = errorWS(t)
			}
			w.T = t
			if c.setup != nil {
				c.setup(t, w)
			}
			r := w.RunIn(c.stdin, c.args...)
			if r.Code != c.code {
				t.Fatalf("want exit %d, got %v", c.code, r)
			}
			first, rest, _ := strings.Cut(r.Stderr, "\n")
			if !strings.HasPrefix(first, "workspaced: ") || !strings.Contains(r.Stderr, c.want) {
				t.Fatalf("want a \"workspaced: \" line with %q, got %v", c.want, r)
			}
			hint := strings.Contains("\n"+rest, "\nhint: ")
			switch {
			case c.noFix == "" && !hint:
				t.Errorf("no hint, though the fix is known:\n%s", r.Stderr)
			case c.noFix != "" && hint:
				t.Errorf("a hint where none was expected (%s):\n%s", c.noFix, r.Stderr)
			}
			if strings.Contains(r.Stderr, "hint: \n") || strings.Contains(r.Stderr, "hint: see 'workspaced  ") {
				t.Errorf("an empty or broken hint:\n%s", r.Stderr)
			}
		})
	}
}

// errorWS is a workspace with tasks t1 and t2, a thread th_a in t1 and an
// env key k in t1, for the error cases.
func errorWS(t *testing.T) *ws {
	w := newWS(t)
	w.Task("t1")
	w.Task("t2")
	w.Ok("thread", "new", "--task", "t1", "--id", "th_a", "--from", "coordinator", "--to", "solver", "--message", "solve")
	w.Ok("env", "store", "--task", "t1", "--key", "k", "--description", "d", "--value", "1")
	w.Env = append(w.Env[:len(w.Env):len(w.Env)], "WORKSPACE_AGENT=") // no agent from the test's environment
	return w
}

// holdLock takes the lock file at rel (under the root) for the rest of the
// test, as another process would, with a short lock_timeout so that
// waiting for it ends soon.
func holdLock(rel string) func(t *testing.T, w *ws) {
	return func(t *testing.T, w *ws) {
		w.writeFile("workspace.json", `{"lock_timeout": "200ms"}`)
		l, err := locking.Acquire(context.Background(), filepath.Join(w.Root, filepath.FromSlash(rel)), locking.Options{Agent: "holder"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Release() })
	}
}

// serving starts a daemon on the workspace and waits until it serves.
func serving(t *testing.T, w *ws) {
	srv := w.serve()
	clitest.Eventually(t, "the daemon to serve", func() (bool, string) {
		r := w.Run("status", "--json")
		var s files.Status
		_ = json.Unmarshal([]byte(r.Stdout), &s)
		return s.Serving && s.PID == srv.Cmd.Process.Pid, r.String()
	})
}
