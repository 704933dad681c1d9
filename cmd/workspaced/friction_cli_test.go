package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/workspaced/workspaced/friction"
	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/schemas"
)

// addedEntry is `friction add --json`.
type addedEntry struct {
	friction.Entry
	New bool `json:"new"`
}

// distinctFriction is a description no other (p, i) shares even after
// normalisation, which turns every run of digits into "#".
func distinctFriction(p, i int) string {
	return fmt.Sprintf("distinct friction from process %c, item %c", 'a'+p, 'a'+i)
}

// TestFrictionAddConcurrent: eight processes adding at once lose no entry
// and never hand out an id twice.
func TestFrictionAddConcurrent(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	const procs, each = 8, 10
	var wg sync.WaitGroup
	ids := make([][]string, procs)
	errs := make(chan string, procs*each)
	for p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				r := w.Run("friction", "add", "--type", friction.Types[(p+i)%len(friction.Types)],
					"--task", fmt.Sprintf("task-%d", p), "--agent", fmt.Sprintf("agent-%d", p),
					"--description", distinctFriction(p, i))
				if r.Code != 0 || r.Stderr != "" {
					errs <- r.String()
					continue
				}
				ids[p] = append(ids[p], strings.TrimSpace(r.Stdout))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("friction add failed: %s", e)
	}
	seen := map[string]bool{}
	for _, l := range ids {
		for _, id := range l {
			if seen[id] {
				t.Errorf("id %s handed out twice", id)
			}
			seen[id] = true
		}
	}
	var entries []friction.Entry
	clitest.Decode(t, w.Ok("friction", "list", "--json"), &entries)
	if len(entries) != procs*each || len(seen) != procs*each {
		t.Fatalf("%d entries listed, %d ids printed, want %d", len(entries), len(seen), procs*each)
	}
	descs := map[string]bool{}
	for i, e := range entries {
		if want := fmt.Sprintf("friction_%03d", i+1); e.ID != want {
			t.Errorf("entry %d has id %s, want %s", i, e.ID, want)
		}
		if !seen[e.ID] {
			t.Errorf("entry %s was never printed by an add", e.ID)
		}
		descs[e.Description] = true
		if e.Occurrences != 1 || e.Status != friction.StatusPending {
			t.Errorf("entry %s: occurrences %d, status %s", e.ID, e.Occurrences, e.Status)
		}
	}
	for p := range procs {
		for i := range each {
			if d := distinctFriction(p, i); !descs[d] {
				t.Errorf("lost: %q", d)
			}
		}
	}
	raw, err := os.ReadFile(filepath.Join(w.Root, friction.File))
	if err != nil {
		t.Fatal(err)
	}
	if err := schemas.Validate(schemas.KindFriction, raw); err != nil {
		t.Errorf("friction.json does not validate after concurrent adds: %v", err)
	}
}

// TestFrictionDedup: a repeat of a known pending pattern grows its
// occurrences and tasks through the CLI; once resolved, a repeat is new.
func TestFrictionDedup(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	add := func(args ...string) (string, string) {
		t.Helper()
		r := w.Run(append([]string{"friction", "add"}, args...)...)
		if r.Code != 0 {
			t.Fatalf("friction add %q: %v", args, r)
		}
		return r.Stdout, r.Stderr
	}
	out, errOut := add("--type", "reviewer_pattern", "--task", "t1", "--description", "Missing input validation in handler 3",
		"--pattern", "missing input validation")
	if out != "friction_001\n" || errOut != "" {
		t.Fatalf("first add printed %q / %q", out, errOut)
	}
	// Same pattern up to case and spacing; new tasks.
	out, errOut = add("--type", "reviewer_pattern", "--task", "t2", "--task", "t1", "--description", "handler 9 lacks validation",
		"--pattern", "  Missing   INPUT validation ")
	if out != "friction_001\n" {
		t.Errorf("a known pattern printed %q, want the existing id", out)
	}
	if want := "note: a known pattern: friction_001 now has 2 occurrences\n"; errOut != want {
		t.Errorf("a known pattern: stderr %q, want %q", errOut, want)
	}
	// Without a pattern, the description is what repeats are known by.
	add("--type", "worker_failure", "--task", "t3", "--description", "solver ran out of memory on grid 12")
	var a addedEntry
	clitest.Decode(t, w.Ok("friction", "add", "--type", "worker_failure", "--task", "t4", "--json",
		"--description", "Solver ran out of  memory on grid 12", "--suggested-action", "raise the memory limit"), &a)
	if a.New || a.ID != "friction_002" || a.Occurrences != 2 || !reflect.DeepEqual(a.AffectedTasks, []string{"t3", "t4"}) ||
		a.SuggestedAction != "raise the memory limit" {
		t.Errorf("merged entry = %+v", a)
	}
	// The same words under another type are another friction.
	clitest.Decode(t, w.Ok("friction", "add", "--type", "timeout", "--description", "solver ran out of memory on grid 12", "--json"), &a)
	if !a.New || a.ID != "friction_003" {
		t.Errorf("another type merged: %+v", a)
	}

	var e friction.Entry
	clitest.Decode(t, w.Ok("friction", "show", "friction_001", "--json"), &e)
	if e.Occurrences != 2 || !reflect.DeepEqual(e.AffectedTasks, []string{"t1", "t2"}) || e.Description != "Missing input validation in handler 3" {
		t.Errorf("friction_001 after a repeat = %+v", e)
	}

	// Resolved entries are never merged into.
	w.Ok("friction", "resolve", "friction_001", "--status", "applied")
	out, errOut = add("--type", "reviewer_pattern", "--task", "t5", "--description", "again", "--pattern", "missing input validation")
	if out != "friction_004\n" || errOut != "" {
		t.Errorf("a repeat of a resolved pattern printed %q / %q, want a new entry friction_004", out, errOut)
	}

	// A pattern given is matched as given: digits count.
	for i := 1; i <= 8; i++ {
		want := fmt.Sprintf("friction_%03d\n", 4+i)
		if out, errOut := add("--type", "worker_failure", "--task", "t6", "--description", "probe failed", "--pattern", fmt.Sprintf("probe-%d", i)); out != want || errOut != "" {
			t.Errorf("probe-%d printed %q / %q, want a new entry %s", i, out, errOut, strings.TrimSpace(want))
		}
	}
	var all []friction.Entry
	clitest.Decode(t, w.Ok("friction", "list", "--type", "worker_failure", "--json"), &all)
	if len(all) != 9 {
		t.Errorf("%d worker_failure entries, want the solver's and probe-1…probe-8: %+v", len(all), all)
	}
}

// TestFrictionListFilters: list selects by status and type, in id order,
// as a table or JSON.
func TestFrictionListFilters(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Ok("friction", "add", "--type", "timeout", "--task", "t1", "--description", "st_1 in progress for 3 hours")
	w.Ok("friction", "add", "--type", "escalation", "--task", "t2", "--task", "t3", "--description", "reviewer escalated the plan to a human")
	w.Ok("friction", "add", "--type", "timeout", "--description", "st_2 stuck "+strings.Repeat("very ", 30)+"long")
	w.Ok("friction", "resolve", "friction_002", "--status", "dismissed")
	w.Ok("friction", "resolve", "friction_003", "--status", "applied")

	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"all", nil, []string{"friction_001", "friction_002", "friction_003"}},
		{"by status", []string{"--status", "pending"}, []string{"friction_001"}},
		{"by type", []string{"--type", "timeout"}, []string{"friction_001", "friction_003"}},
		{"by both", []string{"--type", "timeout", "--status", "applied"}, []string{"friction_003"}},
		{"none match", []string{"--type", "worker_failure"}, []string{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var es []friction.Entry
			clitest.Decode(t, w.Ok(append([]string{"friction", "list", "--json"}, c.args...)...), &es)
			got := []string{}
			for _, e := range es {
				got = append(got, e.ID)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("--json ids = %v, want %v", got, c.want)
			}
			text := w.Ok(append([]string{"friction", "list"}, c.args...)...)
			if len(c.want) == 0 {
				if text != "no friction entries\n" {
					t.Errorf("empty list printed %q", text)
				}
				return
			}
			lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
			if len(lines) != len(c.want)+1 || !strings.HasPrefix(lines[0], "ID") {
				t.Fatalf("table has %d lines, want a header and %d rows:\n%s", len(lines), len(c.want), text)
			}
			for i, id := range c.want {
				if !strings.HasPrefix(lines[i+1], id+" ") {
					t.Errorf("row %d = %q, want %s", i+1, lines[i+1], id)
				}
			}
		})
	}
	text := w.Ok("friction", "list")
	for _, s := range []string{"TYPE", "STATUS", "OCCURRENCES", "TASKS", "DESCRIPTION", "t2,t3", "dismissed", "st_2 stuck very", "…"} {
		if !strings.Contains(text, s) {
			t.Errorf("table lacks %q:\n%s", s, text)
		}
	}
	if strings.Contains(text, "long") {
		t.Errorf("table does not cut a long description:\n%s", text)
	}
}

// TestFrictionResolve: resolve sets the status, may be repeated, and show
// reflects it.
func TestFrictionResolve(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Ok("friction", "add", "--type", "repeated_revision", "--task", "t1", "--description", "plan sent back 3 times",
		"--pattern", "plan revision loop", "--suggested-action", "give the planner the reviewer's checklist")
	if out := w.Ok("friction", "resolve", "friction_001", "--status", "dismissed"); out != "friction_001 dismissed\n" {
		t.Errorf("resolve printed %q", out)
	}
	// The ID may also follow the flags; an entry may be resolved again.
	var e friction.Entry
	clitest.Decode(t, w.Ok("friction", "resolve", "--status", "applied", "friction_001", "--json"), &e)
	if e.Status != friction.StatusApplied || e.ID != "friction_001" {
		t.Errorf("resolve --json = %+v", e)
	}
	show := w.Ok("friction", "show", "friction_001")
	for _, s := range []string{"status:", "applied", "plan sent back 3 times", "pattern:", "plan revision loop",
		"suggested action:", "give the planner the reviewer's checklist", "tasks:", "t1", "occurrences:"} {
		if !strings.Contains(show, s) {
			t.Errorf("show lacks %q:\n%s", s, show)
		}
	}
}

// TestFrictionErrors: what the friction commands refuse, with exit codes,
// and nothing written.
func TestFrictionErrors(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Ok("friction", "add", "--type", "timeout", "--description", "seed")
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown id", []string{"show", "friction_999"}, 3, "friction_999"},
		{"resolve unknown id", []string{"resolve", "friction_999", "--status", "applied"}, 3, "friction_999"},
		{"bad type", []string{"add", "--type", "slowness", "--description", "x"}, 1,
			"want repeated_revision, reviewer_pattern, worker_failure, timeout, escalation"},
		{"bad list type", []string{"list", "--type", "slowness"}, 1, "want repeated_revision, reviewer_pattern"},
		{"bad list status", []string{"list", "--status", "open"}, 1, "want pending, applied, dismissed"},
		{"bad resolve status", []string{"resolve", "friction_001", "--status", "pending"}, 1, "want applied or dismissed"},
		{"bad task id", []string{"add", "--type", "timeout", "--description", "x", "--task", "../etc"}, 1, `task id "../etc"`},
		{"blank description", []string{"add", "--type", "timeout", "--description", "   "}, 1, "empty description"},
		{"missing type", []string{"add", "--description", "x"}, 2, "missing --type"},
		{"missing description", []string{"add", "--type", "timeout"}, 2, "missing --description"},
		{"missing status", []string{"resolve", "friction_001"}, 2, "missing --status"},
		{"missing id", []string{"show"}, 2, "missing the entry ID"},
		{"two ids", []string{"show", "friction_001", "friction_002"}, 2, `unexpected argument "friction_002"`},
		{"unknown subcommand", []string{"delete", "friction_001"}, 2, `unknown subcommand "delete"`},
		{"no subcommand", nil, 2, "missing subcommand"},
		{"unknown flag", []string{"list", "--colour"}, 2, "unknown flag --colour"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := w.Tree()
			w.Fails(c.code, c.want, append([]string{"friction"}, c.args...)...)
			clitest.SameTree(t, before, w.Tree(), "a refused friction command")
		})
	}
	t.Run("corrupt log", func(t *testing.T) {
		w := newWS(t)
		name := filepath.Join(w.Root, friction.File)
		if err := os.WriteFile(name, []byte("{\"entries\": [}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		r := w.Fails(1, "friction", "friction", "add", "--type", "timeout", "--description", "x")
		if !strings.Contains(r.Stderr, "hint: fix or move "+name) {
			t.Errorf("no hint for a corrupt log: %v", r)
		}
		if data, _ := os.ReadFile(name); string(data) != "{\"entries\": [}\n" {
			t.Errorf("a corrupt log was overwritten: %q", data)
		}
	})
	t.Run("not a workspace", func(t *testing.T) {
		dir := t.TempDir()
		nw := &ws{&clitest.WS{T: t, Root: dir, Dir: dir, Env: append(clitest.CleanEnv(), "WORKSPACE_ROOT="+dir)}}
		nw.Fails(3, "neither workspace.json nor tasks/", "friction", "list")
	})
}

// TestFrictionHelp: every friction command documents itself, with examples
// and exit codes.
func TestFrictionHelp(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	for _, args := range [][]string{{"friction", "--help"}, {"help", "friction"}, {"friction", "add", "--help"},
		{"friction", "list", "--help"}, {"friction", "show", "--help"}, {"friction", "resolve", "--help"}} {
		out := w.Ok(args...)
		for _, s := range []string{"Usage:", "Examples:", "Exit codes:"} {
			if !strings.Contains(out, s) {
				t.Errorf("%q lacks %q:\n%s", args, s, out)
			}
		}
	}
	if out := w.Ok("friction", "add", "--help"); !strings.Contains(out, "repeated_revision, reviewer_pattern, worker_failure, timeout, escalation") {
		t.Errorf("friction add --help does not list the types:\n%s", out)
	}
}
