package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"
)

const gridsSkillFile = `---
description: Reading ARC grids: rows, columns, colours 0-9
tags: [grids, arc]
modes: [analysis]
---
# Grids

Read row by row, then column by column.
`

func TestSkillCLI(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	file := filepath.Join(w.Dir, "grids.md")
	if err := os.WriteFile(file, []byte(gridsSkillFile), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := w.Ok("skill", "list"); !strings.HasPrefix(got, "no skills") {
		t.Errorf("list of none: %q", got)
	}
	if got := w.Ok("skill", "add", "--name", "grids", "--file", file); got != "wrote "+filepath.Join(w.Root, "skills", "grids.md")+"\n" {
		t.Errorf("add printed %q", got)
	}
	stored, err := os.ReadFile(filepath.Join(w.Root, "skills", "grids.md"))
	if err != nil || string(stored) != gridsSkillFile {
		t.Fatalf("stored %q, %v", stored, err)
	}
	// The body alone, with the front matter from flags, on stdin.
	r := w.RunIn("Say what you did.\n", "skill", "add", "--name", "core", "--description", "[house] Rules for every agent", "--file", "-", "--json")
	var added struct {
		Name, Description string
		Tags, Modes       []string
		Body              string
	}
	clitest.Decode(t, r.Stdout, &added)
	if r.Code != 0 || added.Name != "core" || added.Description != "[house] Rules for every agent" || added.Body != "" {
		t.Fatalf("add --description: %v %+v", r, added)
	}
	if got := w.Ok("skill", "show", "--name", "core"); got != "---\ndescription: \"[house] Rules for every agent\"\n---\nSay what you did.\n" {
		t.Errorf("show core:\n%s", got)
	}
	w.RunIn("Review twice.\n", "skill", "add", "--name", "review", "--description", "How to review", "--modes", "review", "--tags", "code, plans", "--file", "-")
	list := w.Ok("skill", "list")
	for _, s := range []string{"NAME", "core", "grids", "grids,arc", "analysis", "review", "code,plans", "How to review"} {
		if !strings.Contains(list, s) {
			t.Errorf("list lacks %q:\n%s", s, list)
		}
	}
	var show struct {
		Name string   `json:"name"`
		Tags []string `json:"tags"`
		Size int64    `json:"size"`
		Body string   `json:"body"`
	}
	clitest.Decode(t, w.Ok("skill", "show", "--name", "grids", "--json"), &show)
	if show.Name != "grids" || len(show.Tags) != 2 || show.Size != int64(len(gridsSkillFile)) || !strings.HasPrefix(show.Body, "# Grids") {
		t.Errorf("show --json: %+v", show)
	}

	before := w.Tree()
	w.Fails(exitConflict, "the skill exists", "skill", "add", "--name", "grids", "--file", file)
	broken := filepath.Join(w.Dir, "broken.md")
	if err := os.WriteFile(broken, []byte("---\ndescription: d\ntags grids\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = w.Fails(exitFailure, `line 3: "tags grids" is not a key: value line`, "skill", "add", "--name", "grids", "--file", broken, "--replace")
	if !strings.Contains(r.Stderr, "\nhint: a skill begins with a front matter") {
		t.Errorf("no hint on a broken front matter: %v", r)
	}
	w.Fails(exitFailure, "tags/0: pattern", "skill", "add", "--name", "x", "--description", "d", "--tags", "two words", "--file", file)
	w.Fails(exitFailure, "skill name", "skill", "add", "--name", "../x", "--file", file)
	w.Fails(exitUsage, "missing --name", "skill", "add", "--file", file)
	w.Fails(exitUsage, "--tags and --modes go with --description", "skill", "add", "--name", "x", "--tags", "a", "--file", file)
	w.Fails(exitNotFound, "no skills/nope.md", "skill", "show", "--name", "nope")
	w.Fails(exitNotFound, "no skills/nope.md", "skill", "remove", "--name", "nope")
	clitest.SameTree(t, before, w.Tree(), "refused skill commands")

	w.Ok("skill", "add", "--name", "grids", "--file", file, "--replace")
	// Refused files are listed, never fatal.
	if err := os.Symlink(file, filepath.Join(w.Root, "skills", "linked.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.Root, "skills", "broken.md"), []byte("no front matter\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	list = w.Ok("skill", "list")
	for _, s := range []string{"skills/linked.md: refused: is a symlink", "skills/broken.md: refused: front matter: line 1:"} {
		if !strings.Contains(list, s) {
			t.Errorf("list lacks %q:\n%s", s, list)
		}
	}
	var lj struct {
		Skills  []struct{ Name string } `json:"skills"`
		Refused []struct{ File, Reason string }
	}
	clitest.Decode(t, w.Ok("skill", "list", "--json"), &lj)
	if len(lj.Skills) != 3 || len(lj.Refused) != 2 {
		t.Errorf("list --json: %+v", lj)
	}
	w.Fails(exitFailure, "front matter: line 1", "skill", "show", "--name", "broken")
	w.Fails(exitFailure, "is a symlink", "skill", "show", "--name", "linked")

	// validate checks skills: the front matter line, or the schema pointer.
	if err := os.WriteFile(filepath.Join(w.Root, "skills", "badtag.md"), []byte("---\ndescription: d\ntags: [a b]\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(w.Root, "skills", "linked.md"))
	r = w.Run("validate", filepath.Join(w.Root, "skills"))
	wantOut := filepath.Join(w.Root, "skills", "badtag.md") + ": /tags/0: pattern: does not match pattern '^[A-Za-z0-9][A-Za-z0-9._+#-]{0,63}$'\n" +
		filepath.Join(w.Root, "skills", "broken.md") + ": (root): front matter: line 1: \"no front matter\" is not \"---\": a skill begins with its front matter\n"
	if r.Code != exitFailure || r.Stdout != wantOut || !strings.Contains(r.Stderr, "2 of 5 files invalid") {
		t.Errorf("validate skills:\n%v\nwant:\n%s", r, wantOut)
	}
	os.Remove(filepath.Join(w.Root, "skills", "badtag.md"))
	os.Remove(filepath.Join(w.Root, "skills", "broken.md"))
	if got := w.Ok("validate"); !strings.HasPrefix(got, "ok ") {
		t.Errorf("validate of a tree with skills: %q", got)
	}

	if got := w.Ok("skill", "remove", "--name", "review"); !strings.HasPrefix(got, "removed ") {
		t.Errorf("remove printed %q", got)
	}
	if _, err := os.Stat(filepath.Join(w.Root, "skills", "review.md")); !os.IsNotExist(err) {
		t.Errorf("review.md still there: %v", err)
	}
	if got := w.Ok("schema", "skill"); !strings.Contains(got, `"additionalProperties": false`) {
		t.Errorf("schema skill:\n%s", got)
	}
}

// skillWS is the ARC walkthrough with skills, memory and a second thread
// of the observer in another task.
func skillWS(t *testing.T) *ws {
	t.Helper()
	w := arcWS(t)
	for name, text := range map[string]string{
		"core":  "---\ndescription: Rules for every agent\n---\nSay what you did and what you did not.\n",
		"grids": gridsSkillFile,
		"plans": "---\ndescription: Planning\nmodes: [planning]\n---\nPlan first.\n",
	} {
		w.RunIn(text, "skill", "add", "--name", name, "--file", "-")
	}
	w.Ok("thread", "update", "--thread", "th_observer", "--skill-tags", "grids", "--primary-mode", "analysis")
	w.Ok("thread", "update", "--thread", "th_solver", "--progress", "Loaded the task; consulting the observer for pattern analysis.")
	w.Ok("memory", "store", "--scope", "agent", "--agent", "observer", "--key", "grid_habits", "--description", "How I read grids", "--value", `"row by row"`)
	w.Ok("memory", "store", "--scope", "global", "--key", "house_style", "--description", "How answers are written", "--value", `"short"`)
	w.Ok("task", "create", "--id", "training-002", "--description", "Solve ARC task training-002")
	w.Ok("thread", "new", "--task", "training-002", "--id", "th2_observer", "--from", "coordinator", "--to", "observer", "--message", "Look at training-002.")
	return w
}

func TestContextCLISkillsMemoryAndActivation(t *testing.T) {
	t.Parallel()
	w := skillWS(t)
	got := w.Ok("context", "--thread", "th_observer")
	for _, s := range []string{"## Skills\n\n### skill:core\n(skill, for every thread) Rules for every agent\n",
		"### skill:grids\n(skill, for mode analysis and tag grids) Reading ARC grids", "primary mode: analysis\nskill tags: grids\n"} {
		if !strings.Contains(got, s) {
			t.Errorf("context lacks %q:\n%s", s, got)
		}
	}
	if strings.Contains(got, "skill:plans") {
		t.Errorf("a skill of another mode was loaded:\n%s", got)
	}

	sys := w.Ok("system-context", "--agent", "observer")
	if !strings.Contains(sys, "### What you remember\n") || !strings.Contains(sys, "- grid_habits: How I read grids\n") ||
		!strings.Contains(sys, "- house_style: How answers are written\n") || strings.Contains(sys, "row by row") {
		t.Errorf("system context memory:\n%s", sys)
	}
	pre := w.Ok("preamble", "--thread", "th_observer", "--detail", "standard")
	if !strings.Contains(pre, `Task context: The human asked: "Solve ARC task training-001". solver's latest step: "Loaded the task; consulting the observer for pattern analysis."`+"\n") {
		t.Errorf("preamble:\n%s", pre)
	}

	// Switching threads.
	w.Fails(exitNotFound, "no thread addressed to it is active", "context", "--agent", "terse")
	got = w.Ok("thread", "activate", "--thread", "th2_observer")
	if got != "activated thread th2_observer (task training-002) for observer\nset pending: thread th_observer (task training-001)\n" {
		t.Errorf("activate printed %q", got)
	}
	byAgent := w.Ok("context", "--agent", "observer")
	if !strings.HasPrefix(byAgent, "# Context of thread th2_observer (agent observer, task training-002)\n") ||
		!strings.Contains(byAgent, "### thread:training-001/th_observer\ntask: training-001\nsolver → observer · pending\n") {
		t.Errorf("context --agent after activating th2_observer:\n%s", byAgent)
	}
	var act struct {
		Task   string `json:"task"`
		Thread struct {
			ID          string `json:"id"`
			Status      string `json:"status"`
			ActivatedAt string `json:"activated_at"`
		} `json:"thread"`
		Pending []struct{ Task, Thread string } `json:"pending"`
	}
	clitest.Decode(t, w.Ok("thread", "activate", "--thread", "th_observer", "--agent", "observer", "--json"), &act)
	if act.Task != "training-001" || act.Thread.Status != "active" || act.Thread.ActivatedAt == "" || len(act.Pending) != 1 || act.Pending[0].Thread != "th2_observer" {
		t.Errorf("activate --json: %+v", act)
	}
	if show := w.Ok("thread", "show", "--thread", "th_observer"); !strings.Contains(show, "primary mode:") || !strings.Contains(show, "activated:") {
		t.Errorf("thread show:\n%s", show)
	}
	if again := w.Ok("context", "--agent", "observer"); !strings.HasPrefix(again, "# Context of thread th_observer ") {
		t.Errorf("context --agent after switching back:\n%s", again)
	}
	w.Fails(exitFailure, "addressed to solver, not observer", "thread", "activate", "--thread", "th_solver", "--agent", "observer")
	w.Fails(exitNotFound, "th_nowhere", "thread", "activate", "--thread", "th_nowhere")
	w.Fails(exitUsage, "missing --thread", "thread", "activate")
	w.Fails(exitUsage, "not both", "context", "--thread", "th_observer", "--agent", "observer")
	w.Fails(exitUsage, "--task goes with --thread", "context", "--agent", "observer", "--task", "training-001")
}

// The sample tree shows skills and memory: the observer's thread loads
// core and grids, and its system context lists what it remembers.
func TestExampleWorkspaceSkillsAndMemory(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..", "examples", "workspace")
	run := func(args ...string) string {
		t.Helper()
		out, err := clitest.Command(append([]string{"--root", root}, args...)...).Output()
		if err != nil {
			t.Fatalf("workspaced %v: %v", args, err)
		}
		return string(out)
	}
	ctx := run("context", "--thread", "th_observer")
	for _, s := range []string{"### skill:core\n(skill, for every thread) ", "### skill:grids\n(skill, for mode analysis and tag grids) ",
		"### memory:global:house_style\n"} {
		if !strings.Contains(ctx, s) {
			t.Errorf("context of th_observer lacks %q:\n%s", s, ctx)
		}
	}
	if strings.Contains(ctx, "## Left out") {
		t.Errorf("the sample context leaves something out:\n%s", ctx)
	}
	sys := run("system-context", "--agent", "observer")
	for _, s := range []string{"- grid_habits: How I read a grid", "- house_style: How answers are written"} {
		if !strings.Contains(sys, s) {
			t.Errorf("system context lacks %q:\n%s", s, sys)
		}
	}
	if pre := run("preamble", "--thread", "th_observer"); !strings.Contains(pre, `solver's latest step: "Loaded the task; consulting the observer for pattern analysis"`) {
		t.Errorf("preamble:\n%s", pre)
	}
	if list := run("skill", "list", "--json"); !strings.Contains(list, `"refused": []`) {
		t.Errorf("sample skills refused:\n%s", list)
	}
}
