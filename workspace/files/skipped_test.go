package files

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/workspaced/workspaced/workspace"
)

// TestSkippedIn: for every directory a listing or the daemon reads, each
// broken, huge, nested, symlinked or malicious entry is reported with why,
// and nothing that reads fine is.
func TestSkippedIn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w, _ := newWS(t)
	newTask(t, w, "t1")
	env := workspace.Scope{Kind: workspace.ScopeThread, TaskID: "t1"}
	for _, k := range []string{"good", "other", "../../etc/passwd"} {
		if _, err := w.StoreEntry(ctx, env, workspace.StoreRequest{Key: k, Description: "d", Value: []byte(`1`), Agent: "a"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.StoreEntry(ctx, workspace.Scope{Kind: workspace.ScopeGlobal}, workspace.StoreRequest{Key: "g", Description: "d", Value: []byte(`1`), Agent: "a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.NewThread(ctx, workspace.NewThreadRequest{TaskID: "t1", ID: "th1", From: "a", To: "b", Message: "m"}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteOutput(ctx, "t1", "st_1", "a", []byte(`{"summary": "fine"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteReview(ctx, "t1", "r1", "a", []byte(`{"type": "plan_review", "verdict": "approved"}`)); err != nil {
		t.Fatal(err)
	}
	root := w.Dir()
	outside := filepath.Join(t.TempDir(), "secret.json")
	mustWrite(t, outside, `{"key": "secret", "short_description": "s", "stored_by": "a", "created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-01T00:00:00Z", "version": 1, "value": 1}`)
	entry := func(key string) string {
		return `{"key": "` + key + `", "short_description": "d", "stored_by": "a", "created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-01T00:00:00Z", "version": 1, "value": 1}`
	}
	// Nested deep in its value: list reads it up to the value and shows
	// it (get refuses it, and validate's schema check reports the depth).
	nested := `{"key": "deep", "short_description": "d", "stored_by": "a", "created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-01T00:00:00Z", "version": 1, "value": ` +
		strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`
	deepHead := `{"key": "deephead", "short_description": ` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `, "value": 1}`
	p := func(rel string) string { return filepath.Join(root, filepath.FromSlash(rel)) }

	for _, step := range []func() error{
		// env/
		func() error {
			return os.WriteFile(p("tasks/t1/env/dup.json"), []byte(strings.Replace(entry("dup"), `"key": "dup"`, `"key": "dup", "key": "dup"`, 1)), 0o644)
		},
		func() error { return os.WriteFile(p("tasks/t1/env/mismatch.json"), []byte(entry("other")), 0o644) },
		func() error { return os.WriteFile(p("tasks/t1/env/\xff\xfe.json"), []byte(entry("x")), 0o644) },
		func() error { return os.WriteFile(p("tasks/t1/env/notes.txt"), []byte("hello"), 0o644) },
		func() error { return os.Mkdir(p("tasks/t1/env/sub"), 0o755) },
		func() error { return os.Mkdir(p("tasks/t1/env/subdir.json"), 0o755) },
		func() error { return os.Symlink("good.json", p("tasks/t1/env/link.json")) },
		func() error { return os.Symlink(outside, p("tasks/t1/env/secret.json")) },
		func() error { return syscall.Mkfifo(p("tasks/t1/env/fifo.json"), 0o644) },
		func() error {
			return os.WriteFile(p("tasks/t1/env/broken.json"), []byte(`{"key": "broken", "short_`), 0o644)
		},
		func() error { return os.WriteFile(p("tasks/t1/env/empty.json"), nil, 0o644) },
		func() error { return os.WriteFile(p("tasks/t1/env/deep.json"), []byte(nested), 0o644) },
		func() error { return os.WriteFile(p("tasks/t1/env/deephead.json"), []byte(deepHead), 0o644) },
		func() error {
			return os.WriteFile(p("tasks/t1/env/case.json"), []byte(strings.Replace(entry("case"), `"key"`, `"KEY"`, 1)), 0o644)
		},
		func() error { return sparse(p("tasks/t1/env/huge.json"), 17<<20) },
		func() error { return os.WriteFile(p("tasks/t1/env/.good.json123"), []byte("{"), 0o644) }, // a temporary file: never reported
		// the task directory
		func() error { return os.WriteFile(p("tasks/t1/.done_w1"), []byte("{}"), 0o644) },
		func() error { return os.WriteFile(p("tasks/t1/.claim."), []byte("{}"), 0o644) },
		func() error { return os.Symlink("../../memory/global", p("tasks/t1/sessions")) },
		func() error { return os.Remove(p("tasks/t1/events.log")) },
		func() error { return syscall.Mkfifo(p("tasks/t1/events.log"), 0o644) },
		func() error {
			return os.WriteFile(p("tasks/t1/plan.json"), []byte(`{"id": "p1", "task_id": "t1", "version": 1, "created_at": "2024-01-01T00:00:00Z", "summary": "s", "subtasks": [{"id": "a", "description": "d"}, {"id": "a", "description": "d"}]}`), 0o644)
		},
		// threads/
		func() error { return os.WriteFile(p("tasks/t1/threads/notes.md"), []byte("x"), 0o644) },
		func() error { return os.WriteFile(p("tasks/t1/threads/bad id.json"), []byte("{}"), 0o644) },
		func() error { return copyFile(p("tasks/t1/threads/th1.json"), p("tasks/t1/threads/th2.json")) },
		func() error { return os.WriteFile(p("tasks/t1/threads/th3.json"), []byte("{"), 0o644) },
		func() error { return os.Symlink("th1.json", p("tasks/t1/threads/th4.json")) },
		// outputs/ and reviews/
		func() error { return os.WriteFile(p("tasks/t1/outputs/readme.md"), []byte("x"), 0o644) },
		func() error {
			return os.WriteFile(p("tasks/t1/outputs/bad id.json"), []byte(`{"subtask_id": "bad id"}`), 0o644)
		},
		func() error {
			return os.WriteFile(p("tasks/t1/outputs/st_2.json"), []byte(`{"subtask_id": "st_9", "summary": "x"}`), 0o644)
		},
		func() error { return os.Symlink("st_1.json", p("tasks/t1/outputs/st_3.json")) },
		func() error { return os.Mkdir(p("tasks/t1/outputs/st_4.json"), 0o755) },
		func() error { return sparse(p("tasks/t1/outputs/st_5.json"), 17<<20) },
		func() error {
			return os.WriteFile(p("tasks/t1/reviews/r2.json"), []byte(`{"type": "plan_review"}`), 0o644)
		},
		// tasks/
		func() error { return os.Symlink("t1", p("tasks/alias")) },
		func() error { return os.MkdirAll(p("tasks/t2/.locks"), 0o755) },
		func() error { return os.WriteFile(p("tasks/t2/.locks/task.lock"), nil, 0o644) },
		func() error { return os.Mkdir(p("tasks/t3"), 0o755) },
		// memory/
		func() error { return os.MkdirAll(p("memory/agents/bad name"), 0o755) },
		func() error { return os.WriteFile(p("memory/agents/stray.json"), []byte("{}"), 0o644) },
		func() error { return os.MkdirAll(p("memory/agents/solver"), 0o755) },
		func() error { return os.WriteFile(p("memory/agents/solver/mine.json"), []byte(entry("yours")), 0o644) },
		func() error { return os.WriteFile(p("memory/global/x.txt"), []byte("x"), 0o644) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	// sessions/ of another task, as a real directory.
	newTask(t, w, "t4")
	for _, step := range []func() error{
		func() error { return os.MkdirAll(p("tasks/t4/sessions/bad thread"), 0o755) },
		func() error { return os.WriteFile(p("tasks/t4/sessions/stray.json"), []byte("{}"), 0o644) },
		func() error { return os.MkdirAll(p("tasks/t4/sessions/th1"), 0o755) },
		func() error { return os.WriteFile(p("tasks/t4/sessions/th1/k.json"), []byte(entry("j")), 0o644) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}

	tests := []struct {
		dir  string
		want map[string]string // file → a phrase of its reason
	}{
		{"tasks/t1/env", map[string]string{
			"dup.json":      `field "key" appears twice`,
			"mismatch.json": `holds key "other", which does not match its file name`,
			"\xff\xfe.json": "must be percent-encoded",
			"notes.txt":     "not an entry file",
			"sub":           "not an entry file",
			"subdir.json":   "not a regular file",
			"link.json":     "symlink",
			"secret.json":   "symlink",
			"fifo.json":     "not a regular file",
			"broken.json":   "",
			"empty.json":    "",
			"deephead.json": "nested deeper",
			"case.json":     `entries spell it "key"`,
			"huge.json":     "over the",
		}},
		{"tasks/t1", map[string]string{
			".done_w1":   "looks like a marker",
			".claim.":    "looks like a marker",
			"events.log": "is a FIFO, not a regular file: events reads no event from it",
			"sessions":   `is a symlink (to "../../memory/global"), not a directory`,
			"plan.json":  "subtask a appears twice",
		}},
		{"tasks/t1/threads", map[string]string{
			"notes.md":    "not a thread file",
			"bad id.json": "not a valid thread id",
			"th2.json":    `file holds thread "th1"`,
			"th3.json":    "unreadable",
			"th4.json":    "symlink",
		}},
		{"tasks/t1/outputs", map[string]string{
			"readme.md":   "no done marker can name it",
			"bad id.json": "not a valid subtask id",
			"st_2.json":   `holds subtask_id "st_9", not "st_2"`,
			"st_3.json":   "symlink",
			"st_4.json":   "",
			"st_5.json":   "over the",
		}},
		{"tasks/t1/reviews", map[string]string{
			"r2.json": "does not match its schema",
		}},
		{"tasks", map[string]string{
			"alias": "is a symlink",
		}},
		{"tasks/t2", map[string]string{
			"": "holds nothing but lock files",
		}},
		{"tasks/t3", map[string]string{
			"": "holds no task.json",
		}},
		{"tasks/t4/sessions", map[string]string{
			"bad thread": "not a valid thread id",
			"stray.json": "is a regular file, not a directory of one thread's session entries",
		}},
		{"tasks/t4/sessions/th1", map[string]string{
			"k.json": `holds key "j"`,
		}},
		{"memory/agents", map[string]string{
			"bad name":   "not a valid agent id",
			"stray.json": "is a regular file",
		}},
		{"memory/agents/solver", map[string]string{
			"mine.json": `holds key "yours"`,
		}},
		{"memory/global", map[string]string{
			"x.txt": "not an entry file",
		}},
		{"memory", nil},
		{"config", nil},
		{"tasks/t1/journal", nil},
		{"tasks/alias", nil}, // reported as an entry of tasks/, never looked into
		{"tasks/alias/env", nil},
	}
	for _, tc := range tests {
		t.Run(tc.dir, func(t *testing.T) {
			got, err := w.SkippedIn(ctx, tc.dir)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			for i, s := range got {
				if i > 0 && got[i-1].File >= s.File {
					t.Errorf("not sorted by file: %q before %q", got[i-1].File, s.File)
				}
				rel := strings.TrimPrefix(strings.TrimPrefix(s.File, tc.dir), "/")
				phrase, ok := tc.want[rel]
				switch {
				case !ok:
					t.Errorf("reported %q (%s), which reads fine", s.File, s.Reason)
				case !strings.Contains(s.Reason, phrase):
					t.Errorf("%q: reason %q, want it to say %q", s.File, s.Reason, phrase)
				}
				if s.Reason == "" {
					t.Errorf("%q: no reason", s.File)
				}
				seen[rel] = true
			}
			for rel := range tc.want {
				if !seen[rel] {
					t.Errorf("%q not reported", path2(tc.dir, rel))
				}
			}
		})
	}
}

func path2(dir, rel string) string {
	if rel == "" {
		return dir
	}
	return dir + "/" + rel
}

func mustWrite(t *testing.T, name, data string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// sparse makes a file of size bytes that takes no room on the disk.
func sparse(name string, size int64) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o644)
}
