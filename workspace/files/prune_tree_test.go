package files

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/retention"
)

// taskSpec describes one generated task directory.
type taskSpec struct {
	id          string
	status      string // "" writes no state.json
	completedAt string
	// rawState, if set, is written as state.json instead of a generated one.
	rawState string
	// summarized writes only the summary files.
	summarized bool
}

// info is the TaskInfo the pruner should read back from the generated task.
func (s taskSpec) info() retention.TaskInfo {
	ti := retention.TaskInfo{ID: s.id, Status: s.status, CompletedAt: s.completedAt, Summarized: s.summarized}
	if s.rawState != "" {
		ti.Status, ti.CompletedAt, ti.StateErr = "", "", "unreadable"
	}
	return ti
}

// writeTask creates tasks/<id> under dir: task.json, state.json, events.log,
// plan.json and outputs/st_1.json (five files), plus a stray marker, unless
// the spec is already summarised.
func writeTask(t testing.TB, dir string, s taskSpec) {
	t.Helper()
	td := filepath.Join(dir, "tasks", s.id)
	files := map[string]string{
		"task.json":  fmt.Sprintf("{\n  \"id\": %q,\n  \"description\": \"generated task %s\"\n}\n", s.id, s.id),
		"events.log": fmt.Sprintf("2024-01-01T00:00:00Z task_created %s\n2024-01-01T00:01:00Z task_completed %s\n", s.id, s.id),
	}
	switch {
	case s.rawState != "":
		files["state.json"] = s.rawState
	case s.status != "":
		// completed_at after a nested object, so the reader must skip it.
		ca := "null"
		if s.completedAt != "" {
			ca = fmt.Sprintf("%q", s.completedAt)
		}
		files["state.json"] = fmt.Sprintf(`{"task_id": %q, "status": %q, "phase": "done", "subtasks": {"st_1": {"status": "completed", "blocked_by": ["a", "b"], "attempts": 1, "nested": [[1, 2.5e3], {"x": null, "y": true}]}}, "completed_at": %s, "errors": []}`+"\n", s.id, s.status, ca)
	}
	if !s.summarized {
		files["plan.json"] = `{"plan_id": "p1", "subtasks": [{"id": "st_1"}]}` + "\n"
		files["outputs/st_1.json"] = `{"subtask_id": "st_1", "result": "` + strings.Repeat("x", 200) + `"}` + "\n"
		files[".done.worker_1"] = `{"agent_id": "worker_1"}` + "\n"
	}
	for name, content := range files {
		p := filepath.Join(td, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(td, 0o755); err != nil {
		t.Fatal(err)
	}
}

// entry is one path of a tree snapshot.
type entry struct {
	Mode    fs.FileMode
	Size    int64
	ModTime time.Time
	Content string // regular files only
}

// snapshot lists every path under dir (relative, slash-separated) with its
// mode, size, modification time and content.
func snapshot(t testing.TB, dir string) map[string]entry {
	t.Helper()
	out := map[string]entry{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		e := entry{Mode: fi.Mode(), Size: fi.Size(), ModTime: fi.ModTime()}
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			e.Content = string(b)
		}
		if fi.IsDir() {
			e.Size, e.ModTime = 0, time.Time{} // a directory's size and mtime say nothing of its content
		}
		out[filepath.ToSlash(rel)] = e
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// diffSnapshots describes how two snapshots differ ("" if equal).
func diffSnapshots(before, after map[string]entry) string {
	var diffs []string
	for p, b := range before {
		a, ok := after[p]
		switch {
		case !ok:
			diffs = append(diffs, "gone: "+p)
		case a != b:
			diffs = append(diffs, fmt.Sprintf("changed: %s (%v %d → %v %d)", p, b.Mode, b.Size, a.Mode, a.Size))
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			diffs = append(diffs, "new: "+p)
		}
	}
	slices.Sort(diffs)
	return strings.Join(diffs, "\n")
}

// taskShape classifies tasks/<id> against its original snapshot: "whole"
// (every file as it was), "summarised" (exactly the original's summary
// files, unchanged), "gone", or a description of a half state. Lock files
// (.locks/) are ignored: taking a lock rewrites its holder record.
func taskShape(t testing.TB, dir, id string, original map[string]entry) string {
	t.Helper()
	td := filepath.Join(dir, "tasks", id)
	if _, err := os.Lstat(td); os.IsNotExist(err) {
		return "gone"
	}
	now := withoutLocks(snapshot(t, td))
	orig := withoutLocks(original)
	if diffSnapshots(orig, now) == "" {
		return "whole"
	}
	summary := map[string]entry{}
	for _, f := range summaryFiles {
		if e, ok := orig[f]; ok {
			summary[f] = e
		}
	}
	if d := diffSnapshots(summary, now); d == "" {
		return "summarised"
	} else {
		return "half: " + strings.ReplaceAll(d, "\n", "; ")
	}
}

func withoutLocks(m map[string]entry) map[string]entry {
	out := map[string]entry{}
	for p, e := range m {
		if p == ".locks" || strings.HasPrefix(p, ".locks/") {
			continue
		}
		out[p] = e
	}
	return out
}

// leftovers lists the .prune-* and .trash-* entries of tasks/.
func leftovers(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, "tasks"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prunePrefix) || strings.HasPrefix(e.Name(), trashPrefix) {
			out = append(out, e.Name())
		}
	}
	return out
}
