package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/schemas"
	"github.com/workspaced/workspaced/service"
)

// helpCases is every command and subcommand this file's commands own.
var helpCases = [][]string{
	{"init"}, {"task"}, {"task", "create"}, {"task", "list"}, {"task", "show"},
	{"plan"}, {"plan", "write"}, {"output"}, {"output", "write"}, {"review"}, {"review", "write"},
	{"claim"}, {"done"},
	{"env"}, {"env", "store"}, {"env", "get"}, {"env", "list"}, {"env", "update"}, {"env", "delete"},
	{"memory"}, {"memory", "store"}, {"memory", "get"}, {"memory", "list"}, {"memory", "update"}, {"memory", "delete"},
	{"memory", "put"}, {"memory", "search"}, {"memory", "namespaces"},
	{"thread"}, {"thread", "new"}, {"thread", "show"}, {"thread", "list"}, {"thread", "chain"}, {"thread", "update"},
	{"thread", "activate"}, {"skill"}, {"skill", "add"}, {"skill", "list"}, {"skill", "show"}, {"skill", "remove"},
	{"events"}, {"validate"}, {"locks"}, {"lock"}, {"schema"}, {"version"},
}

func TestHelp(t *testing.T) {
	t.Parallel()
	w := &ws{clitest.At(t, "")} // no workspace needed
	for _, c := range helpCases {
		t.Run(strings.Join(c, "_"), func(t *testing.T) {
			w.T = t
			out := w.Ok(append(append([]string{}, c...), "--help")...)
			for _, want := range []string{"Usage:", "Examples:", "Exit codes:", "workspaced " + c[0]} {
				if !strings.Contains(out, want) {
					t.Errorf("help of %q lacks %q:\n%s", c, want, out)
				}
			}
			if n := strings.Count(out[strings.Index(out, "Examples:"):], "\n  "); n < 2 {
				t.Errorf("help of %q has %d example lines, want at least 2", c, n)
			}
			if via := w.Ok(append([]string{"help"}, c...)...); via != out {
				t.Errorf("'workspaced help %s' differs from '--help'", strings.Join(c, " "))
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t1")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"missing subcommand", []string{"env"}, "env: missing subcommand"},
		{"unknown subcommand", []string{"task", "destroy"}, `unknown subcommand "destroy"`},
		{"bad flag", []string{"env", "store", "--bogus"}, "unknown flag --bogus"},
		{"missing key", []string{"env", "get", "--task", "t1"}, "missing --key"},
		{"missing task", []string{"env", "get", "--key", "k"}, "missing --task T or --thread X"},
		{"missing value", []string{"env", "store", "--task", "t1", "--key", "k", "--description", "d"}, "missing --value"},
		{"value and file", []string{"env", "store", "--task", "t1", "--key", "k", "--description", "d", "--value", "1", "--value-file", "x"}, "not both"},
		{"nothing to update", []string{"env", "update", "--task", "t1", "--key", "k"}, "nothing to update"},
		{"bad if-version", []string{"env", "update", "--task", "t1", "--key", "k", "--value", "1", "--if-version", "x"}, "invalid value"},
		{"memory without scope", []string{"memory", "list"}, "missing --scope"},
		{"memory unknown scope", []string{"memory", "list", "--scope", "galaxy"}, "unknown scope"},
		{"session without thread", []string{"memory", "list", "--scope", "session"}, "needs --thread"},
		{"agent scope without agent", []string{"memory", "list", "--scope", "agent"}, "needs --agent"},
		{"task create without description", []string{"task", "create"}, "missing --description"},
		{"unexpected argument", []string{"task", "list", "extra"}, `unexpected argument "extra"`},
		{"plan without file", []string{"plan", "write", "--task", "t1"}, "missing --file"},
		{"output without agent", []string{"output", "write", "--task", "t1", "--subtask", "s", "--file", "-"}, "missing --agent"},
		{"claim without subtask", []string{"claim", "--task", "t1", "--agent", "a"}, "missing --subtask"},
		{"done without output", []string{"done", "--task", "t1", "--agent", "a"}, "missing --output"},
		{"done bad status", []string{"done", "--task", "t1", "--agent", "a", "--output", "plan.json", "--status", "meh"}, "--status must be"},
		{"thread update nothing", []string{"thread", "update", "--thread", "t1"}, "nothing to update"},
		{"events bad since", []string{"events", "--since", "yesterday"}, "not an RFC 3339 time"},
		{"lock without command", []string{"lock", "--task", "t1", "--name", "k"}, "missing the command"},
		{"lock without name", []string{"lock", "--task", "t1", "--", "true"}, "missing --name"},
		{"schema without kind", []string{"schema"}, "give one KIND"},
		{"top-level bad flag", []string{"--nope", "task", "list"}, "unknown flag --nope"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w.T = t
			r := w.Run(c.args...)
			if r.Code != exitUsage || !strings.Contains(r.Stderr, c.want) || !strings.HasPrefix(r.Stderr, "workspaced: ") {
				t.Fatalf("want exit 2 and %q on stderr, got %v", c.want, r)
			}
			if !strings.Contains(r.Stderr, "\nhint: ") {
				t.Fatalf("want a hint line, got %v", r)
			}
		})
	}
}

// TestHintsNameFlags: the workspace's hints speak of the operation, and
// the CLI points at the flag for the input at fault.
func TestHintsNameFlags(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t1")
	cases := []struct {
		name string
		code int
		args []string
		hint string // the whole hint line
	}{
		{"failed without error", exitFailure, []string{"done", "--task", "t1", "--agent", "a", "--output", "plan.json", "--status", "failed"},
			"hint: say why the work failed (--error)\n"},
		{"task id taken", exitConflict, []string{"task", "create", "--id", "t1", "--description", "again"},
			"hint: choose another id, or leave it out to get a fresh one (--id)\n"},
		{"thread of no task", exitNotFound, []string{"thread", "show", "--thread", "nope"},
			"hint: create the thread first, or name the task it belongs to (--task)\n"},
		{"unknown key", exitNotFound, []string{"env", "get", "--task", "t1", "--key", "nope"},
			"hint: list task t1's env data to see which keys exist\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w.T = t
			r := w.Fails(c.code, "", c.args...)
			if !strings.HasSuffix(r.Stderr, "\n"+c.hint) {
				t.Errorf("want the hint line %q, got %v", c.hint, r)
			}
		})
	}
}

func TestNoWorkspace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w := &ws{&clitest.WS{T: t, Dir: dir, Env: clitest.CleanEnv()}}
	for _, args := range [][]string{{"task", "list"}, {"env", "list", "--task", "t1"}, {"locks"}, {"validate"}, {"events"}} {
		r := w.Fails(exitNotFound, "workspaced init", args...)
		if !strings.Contains(r.Stderr, "hint: ") {
			t.Errorf("%q: no hint: %v", args, r)
		}
	}
	// An existing directory that is not a workspace is refused, not written into.
	other := filepath.Join(dir, "other")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	w.Fails(exitNotFound, "workspace.json", "--root", other, "task", "create", "--description", "x")
	if ents, _ := os.ReadDir(other); len(ents) != 0 {
		t.Fatalf("a command wrote into a non-workspace: %v", ents)
	}
}

func TestInit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w := &ws{&clitest.WS{T: t, Dir: dir, Env: clitest.CleanEnv()}}
	out := w.Ok("init")
	want := "workspace ready at " + filepath.Join(dir, "workspace") + "\n"
	if !strings.HasPrefix(out, want) || !strings.Contains(out, "workspaced task create") {
		t.Fatalf("init printed %q", out)
	}
	for _, f := range []string{"workspace.json", "config/agents.json", "friction/friction.json", "tasks", "memory/global"} {
		if _, err := os.Stat(filepath.Join(dir, "workspace", f)); err != nil {
			t.Errorf("init did not create %s: %v", f, err)
		}
	}
	w.Root = filepath.Join(dir, "workspace")
	before := w.Tree()
	if out2 := w.Ok("init"); out2 != out {
		t.Errorf("second init printed %q, want %q", out2, out)
	}
	clitest.SameTree(t, before, w.Tree(), "a second init")
	// --root after the command name, and a root that names a fresh directory.
	out = w.Ok("init", "--root", "ws2")
	if !strings.Contains(out, filepath.Join(dir, "ws2")) || !strings.Contains(out, "--root "+filepath.Join(dir, "ws2")+" task create") {
		t.Fatalf("init --root printed %q", out)
	}
}

func TestTask(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	id := strings.TrimSpace(w.Ok("task", "create", "--description", "Add JWT auth to the REST API",
		"--context", "Go service", "--constraint", "no new deps", "--constraint", "keep the API", "--priority", "high"))
	if !regexp.MustCompile(`^task_[0-9a-f]{12}$`).MatchString(id) {
		t.Fatalf("generated id %q", id)
	}
	w.Task("t2")
	w.Fails(exitConflict, "a task with this id exists", "task", "create", "--id", "t2", "--description", "again")
	w.Fails(exitFailure, "the description is empty", "task", "create", "--id", "t3", "--description", "   ")

	list := w.Ok("task", "list")
	lines := strings.Split(strings.TrimRight(list, "\n"), "\n")
	if len(lines) != 3 || !regexp.MustCompile(`^ID\s+STATUS\s+CREATED\s+DESCRIPTION$`).MatchString(lines[0]) ||
		!regexp.MustCompile(`^`+id+`\s+new\s+\S+ \S+\s+Add JWT auth to the REST API$`).MatchString(lines[1]) ||
		!strings.HasPrefix(lines[2], "t2 ") {
		t.Fatalf("task list:\n%s", list)
	}
	var rows []taskRow
	clitest.Decode(t, w.Ok("task", "list", "--json"), &rows)
	if len(rows) != 2 || rows[0].ID != id || rows[0].Status != "new" || rows[0].Priority != "high" || rows[1].ID != "t2" {
		t.Fatalf("task list --json: %+v", rows)
	}

	w.Ok("env", "store", "--task", "t2", "--key", "a", "--description", "d", "--value", "1")
	w.Ok("env", "store", "--task", "t2", "--key", "b", "--description", "d", "--value", "2")
	var d taskDetail
	clitest.Decode(t, w.Ok("task", "show", "--task", "t2", "--json"), &d)
	if d.Task.ID != "t2" || d.Status != "new" || d.State != nil || d.PlanVersion != 0 || d.EnvKeys != 2 || d.Threads != 1 {
		t.Fatalf("task show --json: %+v", d)
	}
	show := w.Ok("task", "show", "t2")
	for _, want := range []string{"id:            t2\n", "status:        new\n", "plan:          none\n", "env keys:      2\n"} {
		if !strings.Contains(show, want) {
			t.Errorf("task show lacks %q:\n%s", want, show)
		}
	}
	w.Fails(exitNotFound, "no such task", "task", "show", "--task", "nope")
}

func TestEnvCommands(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t1")
	if got := w.Ok("env", "store", "--task", "t1", "--key", "arc_task", "--description", "the puzzle", "--value", `{"grid":[[0,1],[2,3]]}`); got != "stored \"arc_task\" (version 1)\n" {
		t.Fatalf("store printed %q", got)
	}
	wantValue := "{\n  \"grid\": [\n    [\n      0,\n      1\n    ],\n    [\n      2,\n      3\n    ]\n  ]\n}\n"
	if got := w.Ok("env", "get", "--task", "t1", "--key", "arc_task"); got != wantValue {
		t.Fatalf("get printed %q, want %q", got, wantValue)
	}
	// From stdin and from a file; --agent and $WORKSPACE_AGENT.
	r := w.RunIn("[1, 2, 3]\n", "env", "store", "--task", "t1", "--key", "nums", "--description", "numbers", "--value-file", "-", "--agent", "solver")
	if r.Code != 0 {
		t.Fatal(r)
	}
	file := filepath.Join(w.Dir, "v.json")
	os.WriteFile(file, []byte(`"text"`), 0o644)
	w.Env = append(w.Env, "WORKSPACE_AGENT=observer")
	w.Ok("env", "store", "--task", "t1", "--key", "note", "--description", "a note", "--value-file", file)

	var items []struct {
		Key, ShortDescription, StoredBy string
		Version                         int
		Size                            int64
	}
	out := w.Ok("env", "list", "--task", "t1", "--json")
	if strings.Contains(out, `"value"`) {
		t.Fatalf("list printed values:\n%s", out)
	}
	clitest.Decode(t, strings.ReplaceAll(strings.ReplaceAll(out, "short_description", "ShortDescription"), "stored_by", "StoredBy"), &items)
	if len(items) != 3 || items[0].Key != "arc_task" || items[1].Key != "note" || items[1].StoredBy != "observer" ||
		items[2].Key != "nums" || items[2].StoredBy != "solver" || items[2].ShortDescription != "numbers" || items[2].Size <= 0 {
		t.Fatalf("list --json: %+v", items)
	}
	text := w.Ok("env", "list", "--task", "t1")
	if !regexp.MustCompile(`(?m)^KEY\s+VERSION\s+SIZE\s+UPDATED\s+BY\s+DESCRIPTION\n` +
		`arc_task\s+1\s+\d+ B\s+\S+ \S+\s+cli\s+the puzzle\n`).MatchString(text) {
		t.Fatalf("list:\n%s", text)
	}

	// get --json: the whole entry, whose version drives --if-version.
	var ent struct {
		Key     string          `json:"key"`
		Version int             `json:"version"`
		Value   json.RawMessage `json:"value"`
	}
	clitest.Decode(t, w.Ok("env", "get", "--task", "t1", "--key", "nums", "--json"), &ent)
	if ent.Key != "nums" || ent.Version != 1 || string(compact(t, ent.Value)) != "[1,2,3]" {
		t.Fatalf("get --json: %+v", ent)
	}
	if got := w.Ok("env", "update", "--task", "t1", "--key", "nums", "--value", "[4]", "--if-version", "1"); got != "updated \"nums\" (version 2)\n" {
		t.Fatalf("update printed %q", got)
	}
	before := w.Tree()
	r = w.Fails(exitConflict, "version is 2, not 1", "env", "update", "--task", "t1", "--key", "nums", "--value", "[5]", "--if-version", "1")
	if !strings.Contains(r.Stderr, "hint: read it again") {
		t.Fatalf("conflict without a hint: %v", r)
	}
	clitest.SameTree(t, before, w.Tree(), "a conflicting update")
	// Description only keeps the value.
	w.Ok("env", "update", "--task", "t1", "--key", "nums", "--description", "renamed")
	if got := w.Ok("env", "get", "--task", "t1", "--key", "nums"); got != "[\n  4\n]\n" {
		t.Fatalf("value after a description update: %q", got)
	}
	var meta entryMeta
	clitest.Decode(t, w.Ok("env", "update", "--task", "t1", "--key", "nums", "--value", "[6]", "--json"), &meta)
	if meta.Key != "nums" || meta.Version != 4 || meta.ShortDescription != "renamed" || meta.StoredBy != "observer" {
		t.Fatalf("update --json: %+v", meta)
	}

	// Not found: exit 3.
	w.Fails(exitNotFound, "no such key", "env", "get", "--task", "t1", "--key", "missing")
	w.Fails(exitNotFound, "no such key", "env", "update", "--task", "t1", "--key", "missing", "--value", "1")
	w.Fails(exitNotFound, "no such key", "env", "delete", "--task", "t1", "--key", "missing")
	w.Fails(exitNotFound, "no such task", "env", "list", "--task", "nope")
	w.Fails(exitNotFound, "no task holds this thread", "env", "list", "--thread", "th_nope")

	if got := w.Ok("env", "delete", "--task", "t1", "--key", "note"); got != "deleted \"note\"\n" {
		t.Fatalf("delete printed %q", got)
	}
	w.Fails(exitNotFound, "no such key", "env", "get", "--task", "t1", "--key", "note")

	// Every --task may be --thread.
	w.Ok("thread", "new", "--task", "t1", "--id", "th_solver", "--from", "coordinator", "--to", "solver", "--message", "solve")
	if got := w.Ok("env", "get", "--thread", "th_solver", "--key", "arc_task"); got != wantValue {
		t.Fatalf("get --thread printed %q", got)
	}
	w.Ok("env", "store", "--thread", "th_solver", "--key", "seen", "--description", "d", "--value", "true")
	if got := w.Ok("env", "get", "--task", "t1", "--key", "seen"); got != "true\n" {
		t.Fatalf("a key stored through --thread is not in the task: %q", got)
	}
	w.Ok("task", "create", "--id", "t2", "--description", "other")
	w.Fails(exitNotFound, "no such thread", "env", "get", "--task", "t2", "--thread", "th_solver", "--key", "seen")

	// Events record the writes.
	ev := w.Ok("events", "--task", "t1")
	for _, want := range []string{" env_stored t1 agent=cli key=arc_task version=1\n", " env_updated t1 ", " env_deleted t1 agent=observer key=note\n"} {
		if !strings.Contains(ev, want) {
			t.Errorf("events lack %q:\n%s", want, ev)
		}
	}
}

func compact(t *testing.T, raw json.RawMessage) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	return b
}

func TestValueLimits(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t1")
	big := `"` + strings.Repeat("x", 150<<10) + `"`
	file := filepath.Join(w.Dir, "big.json")
	os.WriteFile(file, []byte(big), 0o644)
	r := w.Run("env", "store", "--task", "t1", "--key", "big", "--description", "big", "--value-file", file)
	if r.Code != 0 || r.Stdout != "stored \"big\" (version 1)\n" ||
		!regexp.MustCompile(`^workspaced: warning: env store "big": value is \d+ bytes, over the 102400-byte warning size`).MatchString(r.Stderr) {
		t.Fatalf("a 150 KiB value: want exit 0 and a warning, got %v", r)
	}
	r = w.Run("env", "update", "--task", "t1", "--key", "big", "--value-file", file, "--json")
	var meta entryMeta
	clitest.Decode(t, r.Stdout, &meta)
	if r.Code != 0 || len(meta.Warnings) != 1 || !strings.Contains(r.Stderr, "warning") {
		t.Fatalf("update of a 150 KiB value: %v", r)
	}

	before := w.Tree()
	huge := `"` + strings.Repeat("x", 1<<20) + `"`
	os.WriteFile(file, []byte(huge), 0o644)
	w.Fails(exitFailure, "over the 1048576-byte limit", "env", "store", "--task", "t1", "--key", "huge", "--description", "d", "--value-file", file)
	w.Fails(exitFailure, "over the 1048576-byte limit", "env", "update", "--task", "t1", "--key", "big", "--value-file", file)
	r = w.RunIn(huge, "memory", "store", "--scope", "global", "--key", "huge", "--description", "d", "--value-file", "-")
	clitest.CheckFailure(t, r, exitFailure, "over the 1048576-byte limit", nil)
	clitest.SameTree(t, before, w.Tree(), "a value over the limit")
}

func TestBadInputWritesNothing(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t1")
	w.Ok("env", "store", "--task", "t1", "--key", "k", "--description", "d", "--value", "1")
	long := strings.Repeat("a", 10<<10)
	store := func(task, key, value string) []string {
		return []string{"env", "store", "--task", task, "--key", key, "--description", "d", "--value", value}
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"task id ..", []string{"task", "create", "--id", "..", "--description", "x"}, `task id ".."`},
		{"task id with slash", []string{"task", "create", "--id", "a/b", "--description", "x"}, `task id "a/b"`},
		{"task id with control byte", []string{"task", "create", "--id", "a\x01b", "--description", "x"}, "not a valid id"},
		{"task id 10 KB", []string{"task", "create", "--id", long, "--description", "x"}, "not a valid id"},
		{"task id invalid UTF-8", []string{"task", "create", "--id", "a\xffb", "--description", "x"}, "not a valid id"},
		{"env task ..", store("..", "k", "1"), `task id ".."`},
		{"env task with slash", store("../t1", "k", "1"), `task id "../t1"`},
		{"key with control byte", store("t1", "a\nb", "1"), "control character"},
		{"key with DEL", store("t1", "a\x7fb", "1"), "control character"},
		{"key 10 KB", store("t1", long, "1"), "key is 10240 bytes"},
		{"key invalid UTF-8", store("t1", "a\xffb", "1"), "not valid UTF-8"},
		{"empty key", append(store("t1", "", "1")[:4], "--key=", "--description", "d", "--value", "1"), "missing --key"},
		{"agent ..", append(store("t1", "k2", "1"), "--agent", ".."), `agent ".."`},
		{"memory agent with slash", []string{"memory", "store", "--scope", "agent", "--agent", "a/b", "--key", "k", "--description", "d", "--value", "1"}, `agent "a/b"`},
		{"session thread ..", []string{"memory", "store", "--scope", "session", "--task", "t1", "--thread", "..", "--key", "k", "--description", "d", "--value", "1"}, `thread id ".."`},
		{"invalid JSON", store("t1", "k2", "{"), "not valid JSON"},
		{"bare word", store("t1", "k2", "nope"), "not valid JSON"},
		{"two values", store("t1", "k2", "1 2"), "after top-level value"},
		{"invalid JSON update", []string{"env", "update", "--task", "t1", "--key", "k", "--value", "[1,"}, "not valid JSON"},
		{"too deep", store("t1", "k2", strings.Repeat("[", 100)+strings.Repeat("]", 100)), "nested deeper"},
		{"output subtask ..", []string{"output", "write", "--task", "t1", "--subtask", "..", "--agent", "w", "--file", "/dev/null"}, `subtask id ".."`},
		{"claim agent with slash", []string{"claim", "--task", "t1", "--agent", "x/y", "--subtask", "s"}, `agent "x/y"`},
		{"review id ..", []string{"review", "write", "--task", "t1", "--id", "..", "--file", "/dev/null"}, "review id"},
		{"thread id with slash", []string{"thread", "new", "--task", "t1", "--id", "a/b", "--from", "x", "--to", "y", "--message", "m"}, `thread id "a/b"`},
		{"lock name ..", []string{"lock", "--task", "t1", "--name", "..", "--", "true"}, `lock name ".."`},
		{"done output outside", []string{"done", "--task", "t1", "--agent", "w", "--output", "../../x.json"}, "is not plan.json"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w.T = t
			before := w.Tree()
			code := exitFailure
			if strings.HasPrefix(c.want, "missing --") {
				code = exitUsage
			}
			w.Fails(code, c.want, c.args...)
			clitest.SameTree(t, before, w.Tree(), "workspaced "+strings.Join(c.args, " "))
		})
	}
}

// A key is any UTF-8 text: "../../etc/passwd" is just an odd name inside the
// scope directory.
func TestOddKeysStayInside(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t1")
	for _, key := range []string{"../../etc/passwd", "/abs", ".hidden", "ключ", "a b%c"} {
		w.Ok("env", "store", "--task", "t1", "--key", key, "--description", "odd", "--value", `"`+key+`"`)
		if got := w.Ok("env", "get", "--task", "t1", "--key", key); got != `"`+key+`"`+"\n" {
			t.Errorf("key %q: get printed %q", key, got)
		}
	}
	for p := range w.Tree() {
		if strings.HasSuffix(p, "/") || !strings.Contains(p, "env") {
			continue
		}
		if filepath.Dir(p) != filepath.Join("tasks", "t1", "env") {
			t.Errorf("an entry file outside env/: %s", p)
		}
	}
	if _, err := os.Stat(filepath.Join(w.Root, "tasks", "t1", "env", "%2E.%2F..%2Fetc%2Fpasswd.json")); err != nil {
		t.Errorf("the encoded file name: %v", err)
	}
	var items []map[string]any
	clitest.Decode(t, w.Ok("env", "list", "--task", "t1", "--json"), &items)
	if len(items) != 5 {
		t.Fatalf("list: %v", items)
	}
}

func TestMemoryScopes(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t1")
	w.Ok("thread", "new", "--task", "t1", "--id", "th_a", "--from", "coordinator", "--to", "solver", "--message", "m")
	w.Ok("memory", "store", "--scope", "global", "--key", "style", "--description", "house style", "--value", `"short"`)
	w.Ok("memory", "store", "--scope", "agent", "--agent", "solver", "--key", "patterns", "--description", "seen", "--value", `["mirror"]`)
	w.Ok("memory", "store", "--scope", "session", "--thread", "th_a", "--key", "scratch", "--description", "notes", "--value", `{"n":1}`)
	for _, c := range []struct{ path, key string }{
		{"memory/global/style.json", "style"},
		{"memory/agents/solver/patterns.json", "patterns"},
		{"tasks/t1/sessions/th_a/scratch.json", "scratch"},
	} {
		if _, err := os.Stat(filepath.Join(w.Root, c.path)); err != nil {
			t.Errorf("%s: %v", c.key, err)
		}
	}
	if got := w.Ok("memory", "get", "--scope", "agent", "--agent", "solver", "--key", "patterns"); got != "[\n  \"mirror\"\n]\n" {
		t.Fatalf("agent get: %q", got)
	}
	// The agent scope is per owner.
	w.Fails(exitNotFound, "no such key", "memory", "get", "--scope", "agent", "--agent", "other", "--key", "patterns")
	w.Fails(exitNotFound, "no such key", "memory", "get", "--scope", "global", "--key", "patterns")
	// Session entries are not env data.
	w.Fails(exitNotFound, "no such key", "env", "get", "--task", "t1", "--key", "scratch")
	w.Ok("memory", "update", "--scope", "session", "--thread", "th_a", "--key", "scratch", "--value", `{"n":2}`, "--if-version", "1")
	w.Fails(exitConflict, "version is 2, not 1", "memory", "update", "--scope", "session", "--thread", "th_a", "--key", "scratch", "--value", `{"n":3}`, "--if-version", "1")
	var items []entryMeta
	clitest.Decode(t, w.Ok("memory", "list", "--scope", "session", "--thread", "th_a", "--json"), &items)
	if len(items) != 1 || items[0].Key != "scratch" || items[0].Version != 2 {
		t.Fatalf("session list: %+v", items)
	}
	w.Ok("memory", "delete", "--scope", "global", "--key", "style")
	if got := w.Ok("memory", "list", "--scope", "global"); got != "no entries\n" {
		t.Fatalf("global list after delete: %q", got)
	}
	w.Fails(exitUsage, "takes no --task", "memory", "list", "--scope", "global", "--task", "t1")
}

func TestPlanOutputReviewMarkers(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t1")
	plan := filepath.Join(w.Dir, "plan.json")
	os.WriteFile(plan, []byte(`{"summary":"two steps","subtasks":[{"id":"st_1","description":"a"},{"id":"st_2","description":"b","dependencies":["st_1"]}]}`), 0o644)
	planPath := filepath.Join(w.Root, "tasks", "t1", "plan.json")
	if got := w.Ok("plan", "write", "--task", "t1", "--file", plan, "--agent", "planner"); got != planPath+"\n" {
		t.Fatalf("plan write printed %q", got)
	}
	out := w.Ok("plan", "write", "--task", "t1", "--file", plan, "--agent", "planner", "--propose", "--json")
	var wr written
	clitest.Decode(t, out, &wr)
	if wr.Path != planPath || wr.Version != 2 || !strings.Contains(wr.Marker, "/tasks/t1/.done.planner.") {
		t.Fatalf("plan write --propose --json: %+v", wr)
	}
	marker, err := os.ReadFile(wr.Marker)
	if err != nil || !strings.Contains(string(marker), `"output_file": "plan.json"`) {
		t.Fatalf("proposal marker: %v %s", err, marker)
	}
	if _, err := os.Stat(filepath.Join(w.Root, "tasks", "t1", "plans", "plan_v1.json")); err != nil {
		t.Fatalf("plan v1 not kept: %v", err)
	}

	// A schema-invalid plan (no subtasks) is refused and nothing is written,
	// not even the copy of the current version.
	before := w.Tree()
	r := w.RunIn(`{"summary":"no subtasks"}`, "plan", "write", "--task", "t1", "--file", "-")
	clitest.CheckFailure(t, r, exitFailure, "required: missing properties: 'subtasks'", nil)
	w.Fails(exitFailure, "no such file", "plan", "write", "--task", "t1", "--file", filepath.Join(w.Dir, "nope.json"))
	w.Fails(exitFailure, "plan", "plan", "write", "--task", "t1", "--file", "/dev/null")
	os.WriteFile(plan, []byte(`{"subtasks":[{"id":"../x","description":"a"}]}`), 0o644)
	w.Fails(exitFailure, "/subtasks/0/id", "plan", "write", "--task", "t1", "--file", plan)
	w.Fails(exitNotFound, "no such task", "plan", "write", "--task", "nope", "--file", "/dev/null")
	clitest.SameTree(t, before, w.Tree(), "refused plans")

	// Output with --done.
	r = w.RunIn(`{"summary":"did a"}`, "output", "write", "--task", "t1", "--subtask", "st_1", "--agent", "worker_1", "--file", "-", "--done")
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	if r.Code != 0 || len(lines) != 2 || lines[0] != filepath.Join(w.Root, "tasks", "t1", "outputs", "st_1.json") ||
		!strings.HasPrefix(lines[1], filepath.Join(w.Root, "tasks", "t1", ".done.worker_1.")) {
		t.Fatalf("output write --done: %v", r)
	}
	r = w.RunIn(`{"status":"bogus"}`, "output", "write", "--task", "t1", "--subtask", "st_2", "--agent", "worker_1", "--file", "-")
	clitest.CheckFailure(t, r, exitFailure, "/status", nil)

	// Review, claim and done.
	r = w.RunIn(`{"type":"plan_review","verdict":"approved"}`, "review", "write", "--task", "t1", "--id", "plan_v2", "--agent", "reviewer", "--file", "-", "--done")
	if r.Code != 0 || !strings.HasPrefix(r.Stdout, filepath.Join(w.Root, "tasks", "t1", "reviews", "plan_v2.json")+"\n") {
		t.Fatalf("review write: %v", r)
	}
	r = w.RunIn(`{"type":"plan_review"}`, "review", "write", "--task", "t1", "--id", "bad", "--file", "-")
	clitest.CheckFailure(t, r, exitFailure, "verdict", nil)
	claim := strings.TrimSpace(w.Ok("claim", "--task", "t1", "--agent", "worker_2", "--subtask", "st_2"))
	if !strings.HasPrefix(claim, filepath.Join(w.Root, "tasks", "t1", ".claim.worker_2.")) {
		t.Fatalf("claim printed %q", claim)
	}
	done := strings.TrimSpace(w.Ok("done", "--task", "t1", "--agent", "worker_1", "--output", "outputs/st_1.json"))
	data, err := os.ReadFile(done)
	if err != nil || !strings.Contains(string(data), `"subtask_id": "st_1"`) || !strings.Contains(string(data), `"status": "completed"`) {
		t.Fatalf("done marker %s: %v %s", done, err, data)
	}
	w.Fails(exitNotFound, "does not exist", "done", "--task", "t1", "--agent", "w", "--output", "outputs/st_9.json")
	w.Fails(exitFailure, "needs an error", "done", "--task", "t1", "--agent", "w", "--output", "outputs/st_1.json", "--status", "failed")
	w.Ok("done", "--task", "t1", "--agent", "w", "--status", "cancelled")
	// Everything written validates.
	if got := w.Ok("validate"); !regexp.MustCompile(`^ok \d+ files\n$`).MatchString(got) {
		t.Fatalf("validate: %q", got)
	}
}

func TestThreads(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t1")
	if got := w.Ok("thread", "new", "--task", "t1", "--id", "th_c", "--from", "human", "--to", "coordinator", "--message", "lead"); got != "th_c\n" {
		t.Fatalf("thread new printed %q", got)
	}
	w.Ok("thread", "new", "--thread", "th_c", "--id", "th_s", "--from", "coordinator", "--to", "solver", "--message", "solve", "--buffers", "env:arc_task")
	w.Ok("thread", "new", "--thread", "th_s", "--id", "th_o", "--from", "solver", "--to", "observer", "--message", "watch")
	w.Fails(exitConflict, "a thread with this id exists", "thread", "new", "--task", "t1", "--id", "th_s", "--from", "a", "--to", "b", "--message", "m")
	w.Fails(exitNotFound, "no such thread", "thread", "new", "--task", "t1", "--parent", "th_zz", "--from", "a", "--to", "b", "--message", "m")

	if got := w.Ok("thread", "chain", "--thread", "th_o"); got != "human → coordinator → coordinator → solver → you (observer)\n" {
		t.Fatalf("chain printed %q", got)
	}
	var chain []struct{ ID, To string }
	clitest.Decode(t, w.Ok("thread", "chain", "--thread", "th_o", "--json"), &chain)
	if len(chain) != 4 || chain[0].ID != "t1" || chain[3].ID != "th_o" || chain[3].To != "observer" {
		t.Fatalf("chain --json: %+v", chain)
	}
	list := w.Ok("thread", "list", "--task", "t1")
	if !regexp.MustCompile(`(?m)^ID\s+PARENT\s+FROM → TO\s+STATUS\s+CREATED\s+CONCERN\n`+
		`t1\s+-\s+human → coordinator\s+active\s+`).MatchString(list) || strings.Count(list, "\n") != 5 {
		t.Fatalf("thread list:\n%s", list)
	}
	var threads []map[string]any
	clitest.Decode(t, w.Ok("thread", "list", "--thread", "th_o", "--json"), &threads)
	if len(threads) != 4 {
		t.Fatalf("thread list --json: %v", threads)
	}

	if got := w.Ok("thread", "update", "--thread", "th_s", "--progress", "rows done", "--concern", "the grid", "--buffers", "env:a,env:b", "--skill-tags", "grids"); got != "updated thread th_s\n" {
		t.Fatalf("thread update printed %q", got)
	}
	var th struct {
		Progress, Concern, Status string
		Buffers                   []string `json:"buffers"`
		SkillTags                 []string `json:"skill_tags"`
		UpdatedAt                 string   `json:"updated_at"`
	}
	clitest.Decode(t, w.Ok("thread", "show", "--thread", "th_s", "--json"), &th)
	if th.Progress != "rows done" || th.Concern != "the grid" || th.Status != "active" || len(th.Buffers) != 2 || th.Buffers[1] != "env:b" ||
		len(th.SkillTags) != 1 || th.UpdatedAt == "" {
		t.Fatalf("after update: %+v", th)
	}
	w.Ok("thread", "update", "--thread", "th_s", "--buffers", "", "--status", "done")
	clitest.Decode(t, w.Ok("thread", "show", "--thread", "th_s", "--json"), &th)
	th.Buffers = nil
	clitest.Decode(t, w.Ok("thread", "show", "--thread", "th_s", "--json"), &th)
	if len(th.Buffers) != 0 || th.Status != "done" || th.Progress != "rows done" {
		t.Fatalf("after clearing buffers: %+v", th)
	}
	before := w.Tree()
	w.Fails(exitFailure, "status", "thread", "update", "--thread", "th_s", "--status", "sleeping")
	clitest.SameTree(t, before, w.Tree(), "an invalid thread status")
	show := w.Ok("thread", "show", "--task", "t1")
	if !strings.Contains(show, "id:         t1\n") || !strings.Contains(show, "from → to:  human → coordinator\n") {
		t.Fatalf("thread show of the root:\n%s", show)
	}
	w.Fails(exitNotFound, "no task holds this thread", "thread", "show", "--thread", "th_missing")
}

func TestValidate(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t1")
	w.Ok("env", "store", "--task", "t1", "--key", "k", "--description", "d", "--value", "1")
	if got := w.Ok("validate"); got != "ok 6 files\n" {
		t.Fatalf("validate printed %q", got)
	}
	// Temporary files and lock files are passed over.
	os.WriteFile(filepath.Join(w.Root, "tasks", "t1", "env", ".k.json12345"), []byte("{"), 0o644)
	if got := w.Ok("validate"); got != "ok 6 files\n" {
		t.Fatalf("validate with a temp file printed %q", got)
	}
	// Break two files.
	os.WriteFile(filepath.Join(w.Root, "tasks", "t1", "task.json"), []byte(`{"id":"t1","created_at":"2024-01-15T10:00:00Z"}`), 0o644)
	os.WriteFile(filepath.Join(w.Root, "tasks", "t1", ".done.w1"), []byte(`{"agent_id": "w1",`), 0o644)
	r := w.Run("validate")
	taskJSON := filepath.Join(w.Root, "tasks", "t1", "task.json")
	doneFile := filepath.Join(w.Root, "tasks", "t1", ".done.w1")
	wantOut := doneFile + ": (root): syntax: invalid JSON at line 1, column 19: unexpected end of JSON input\n" +
		taskJSON + ": (root): required: missing properties: 'description'\n"
	if r.Code != exitFailure || r.Stdout != wantOut || !strings.HasPrefix(r.Stderr, "workspaced: validate: 2 of 7 files invalid") {
		t.Fatalf("validate of a broken tree:\n%v\nwant stdout:\n%s", r, wantOut)
	}
	var rep service.ValidateReport
	r = w.Run("validate", "--json", taskJSON)
	clitest.Decode(t, r.Stdout, &rep)
	if r.Code != exitFailure || rep.Files != 1 || rep.Invalid != 1 || len(rep.Problems) != 1 ||
		rep.Problems[0] != (fileProblem{Path: taskJSON, Pointer: "", Rule: "required", Message: "missing properties: 'description'"}) {
		t.Fatalf("validate --json FILE: %v %+v", r, rep)
	}
	// A directory inside the tree, named relative to the working directory.
	if got := w.Ok("validate", filepath.Join("workspace", "tasks", "t1", "env")); got != "ok 1 files\n" {
		t.Fatalf("validate DIR printed %q", got)
	}
	w.Fails(exitNotFound, "no such file", "validate", "nope")
	w.Fails(exitNotFound, "not inside a workspace", "validate", t.TempDir())
}

// The sample tree in examples/ validates as a root named on the command line.
func TestValidateExamples(t *testing.T) {
	t.Parallel()
	_, here, _, _ := runtime.Caller(0)
	ex := filepath.Join(filepath.Dir(here), "..", "..", "examples", "workspace")
	if _, err := os.Stat(filepath.Join(ex, "workspace.json")); err != nil {
		t.Skip("examples/workspace has no workspace.json yet")
	}
	w := &ws{clitest.At(t, "")}
	if got := w.Ok("validate", ex); !regexp.MustCompile(`^ok \d+ files\n$`).MatchString(got) {
		t.Fatalf("validate examples/workspace: %q", got)
	}
}

func TestEvents(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t1")
	w.Task("t2")
	w.Ok("env", "store", "--task", "t1", "--key", "k", "--description", "d", "--value", "1")
	all := w.Ok("events")
	lines := strings.Split(strings.TrimRight(all, "\n"), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], " task_created t1 ") || !strings.Contains(lines[1], " task_created t2 ") ||
		!strings.Contains(lines[2], " env_stored t1 ") {
		t.Fatalf("events (all tasks, by time):\n%s", all)
	}
	type event struct {
		Time   string            `json:"time"`
		Event  string            `json:"event"`
		TaskID string            `json:"task_id"`
		Attrs  map[string]string `json:"attrs"`
	}
	var evs []event
	for _, l := range strings.Split(strings.TrimRight(w.Ok("events", "--task", "t1", "--json"), "\n"), "\n") {
		var one event
		clitest.Decode(t, l, &one)
		evs = append(evs, one)
	}
	if len(evs) != 2 || evs[1].Event != "env_stored" || evs[1].Attrs["key"] != "k" || evs[1].TaskID != "t1" {
		t.Fatalf("events --json: %+v", evs)
	}
	if got := w.Ok("events", "--since", "2999-01-01T00:00:00Z"); got != "" {
		t.Fatalf("events --since the future: %q", got)
	}
	if got := w.Ok("events", "--task", "t1", "--since", evs[1].Time); strings.Count(got, "\n") != 1 || !strings.Contains(got, "env_stored") {
		t.Fatalf("events --since the last event: %q", got)
	}
	w.Fails(exitNotFound, "no such task", "events", "--task", "nope")
}

func TestSchemaAndVersion(t *testing.T) {
	t.Parallel()
	w := &ws{clitest.At(t, "")}
	if got := w.Ok("schema", "entry"); got != string(schemas.Source(schemas.KindEntry)) {
		t.Fatalf("schema entry printed something else:\n%s", got)
	}
	list := w.Ok("schema", "--list")
	for _, k := range schemas.Kinds() {
		if !regexp.MustCompile(`(?m)^` + string(k) + `\s+\S`).MatchString(list) {
			t.Errorf("schema --list lacks %s:\n%s", k, list)
		}
	}
	w.Fails(exitNotFound, `unknown file kind "nope"`, "schema", "nope")
	v := w.Ok("version")
	if !regexp.MustCompile(`^workspaced \S+\n(build: .*\n)?go: go1\.\S+ \S+/\S+\n$`).MatchString(v) {
		t.Fatalf("version printed %q", v)
	}
}
