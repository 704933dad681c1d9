package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/internal/optdep"
)

// The Python module reads skills as the Go reader does: the same files
// accepted and refused, and for a thread the same skills in the same
// order for the same reasons as the thread's context.
func TestPythonReadsSkillsLikeGo(t *testing.T) {
	t.Parallel()
	py, err := clitest.Python3()
	if err != nil {
		optdep.Skip(t, "python3", "python3 is not on PATH (.ci/run installs it): the Python reader cannot be compared")
	}
	w := skillWS(t)
	dir := filepath.Join(w.Root, "skills")
	files := map[string]string{
		"colours":      "---\ndescription: The ten ARC colours\ntags: [Colours, grids]\n---\n0 black, 1 blue.\n",
		"crlf":         "\ufeff---\r\ndescription: \"[quoted] d\"\r\nmodes: [analysis]\r\n---\r\nbody\r\n",
		"empty":        "",
		"no_close":     "---\ndescription: d\n",
		"indented":     "---\ndescription: d\n  tags: [a]\n---\n",
		"twice":        "---\ndescription: d\ndescription: e\n---\n",
		"open_list":    "---\ndescription: d\ntags: [a\n---\n",
		"empty_item":   "---\ndescription: d\ntags: [a,,b]\n---\n",
		"unknown_key":  "---\ndescription: d\ntag: [a]\n---\n",
		"bare_tags":    "---\ndescription: d\ntags: grids\n---\n",
		"spaced_tag":   "---\ndescription: d\ntags: [two words]\n---\n",
		"dup_tag":      "---\ndescription: d\ntags: [a, a]\n---\n",
		"no_desc":      "---\ntags: [grids]\n---\n",
		"control":      "---\ndescription: \"a\\u0007b\"\n---\n",
		"bad_quote":    "---\ndescription: \"open\n---\n",
		"bad_body":     "---\ndescription: d\ntags: [grids]\n---\n\xff",
		"bad_utf8_key": "---\ndescription: \xff\n---\n",
		"long_front":   "---\ndescription: d\n" + strings.Repeat("\n", 4100) + "---\n",
		"huge":         "---\ndescription: d\ntags: [grids]\n---\n" + strings.Repeat("x", 256<<10),
		"many_tags":    "---\ndescription: d\ntags: [" + strings.Repeat("t,", 40) + "t]\n---\n",
		"Upper.Case-1": "---\ndescription: Mixed-case name\ntags: [GRIDS]\n---\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name+".md"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(dir, "colours.md"), filepath.Join(dir, "linked.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad name.md"), []byte("---\ndescription: d\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.Ok("thread", "update", "--thread", "th_observer", "--skill-tags", "grids,COLOURS")
	if err := os.WriteFile(filepath.Join(w.Root, "config", "agents.json"), []byte(`{"agents": [
  {"name": "observer", "description": "Notices patterns in grids", "skills": ["crlf", "core"]},
  {"name": "solver", "description": "Solves ARC-AGI puzzles"}
]}`), 0o644); err != nil {
		t.Fatal(err)
	}

	var goList struct {
		Skills  []struct{ Name string } `json:"skills"`
		Refused []struct{ File string } `json:"refused"`
	}
	clitest.Decode(t, w.Ok("skill", "list", "--json"), &goList)
	var bundle struct {
		Sections []struct {
			Name  string `json:"name"`
			Items []struct {
				Ref     string `json:"ref"`
				Content string `json:"content"`
			} `json:"items"`
		} `json:"sections"`
	}
	clitest.Decode(t, w.Ok("context", "--thread", "th_observer", "--unlimited", "--json"), &bundle)

	script := `
import json, sys
from workspace_agent import Workspace
ws = Workspace(sys.argv[1], "observer")
skills, refused = ws.skills()
print(json.dumps({"skills": [s["name"] for s in skills], "refused": [r["file"] for r in refused],
                  "thread": [[n, why] for n, why in ws.thread_skills("training-001", "th_observer")]}))
`
	cmd := exec.Command(py, "-c", script, w.Root)
	cmd.Dir = filepath.Join("..", "..", "examples", "agents", "python")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	var pyOut struct {
		Skills  []string    `json:"skills"`
		Refused []string    `json:"refused"`
		Thread  [][2]string `json:"thread"`
	}
	if err := json.Unmarshal(out, &pyOut); err != nil {
		t.Fatalf("python printed %q: %v", out, err)
	}

	var goSkills, goRefused []string
	for _, s := range goList.Skills {
		goSkills = append(goSkills, s.Name)
	}
	for _, r := range goList.Refused {
		goRefused = append(goRefused, r.File)
	}
	sort.Strings(pyOut.Refused)
	if !reflect.DeepEqual(goSkills, pyOut.Skills) {
		t.Errorf("accepted skills differ:\n go %v\n py %v", goSkills, pyOut.Skills)
	}
	if !reflect.DeepEqual(goRefused, pyOut.Refused) {
		t.Errorf("refused skill files differ:\n go %v\n py %v", goRefused, pyOut.Refused)
	}
	if len(goRefused) != 21 {
		t.Errorf("%d files refused, want 21: %v", len(goRefused), goRefused)
	}
	var goThread [][2]string
	for _, it := range bundle.Sections[1].Items {
		why := strings.TrimPrefix(strings.SplitN(it.Content, ")", 2)[0], "(skill, for ")
		goThread = append(goThread, [2]string{strings.TrimPrefix(it.Ref, "skill:"), why})
	}
	want := [][2]string{{"core", "every thread and every thread of observer"}, {"crlf", "every thread of observer and mode analysis"},
		{"grids", "mode analysis and tag grids"}, {"Upper.Case-1", "tag GRIDS"}, {"colours", "tags Colours, grids"}}
	if !reflect.DeepEqual(goThread, want) {
		t.Errorf("Go context skills %q, want %q", goThread, want)
	}
	if !reflect.DeepEqual(pyOut.Thread, want) {
		t.Errorf("Python thread skills %q, want %q", pyOut.Thread, want)
	}
}
