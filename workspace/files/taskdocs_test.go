package files

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/workspaced/workspaced/workspace"
)

// docsFixture is task t1 with a plan in its second version, an output and
// two reviews, and task t2 whose files t1's symlinks point at.
func docsFixture(t *testing.T) (*Store, string) {
	t.Helper()
	w, _ := newWS(t)
	newTask(t, w, "t1")
	newTask(t, w, "t2")
	dir := filepath.Join(w.Dir(), "tasks", "t1")
	write := func(rel, data string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range []string{"1", "2"} {
		write("plan.json", `{"id":"plan_t1","task_id":"t1","version":`+v+`,"summary":"v`+v+`","subtasks":[{"id":"st_1","description":"d"}],"extra":{"seed":12345678901234567890}}`)
		if v == "1" {
			write("plans/plan_v1.json", `{"id":"plan_t1","task_id":"t1","version":1,"subtasks":[{"id":"st_1","description":"d"}]}`)
		}
	}
	write("outputs/st_1.json", `{"subtask_id":"st_1","summary":"done","custom":[1,2]}`)
	write("reviews/plan_v1.json", `{"id":"plan_v1","type":"plan_review","verdict":"revision_needed","reviewed_at":"2024-01-15T10:05:00Z","issues":[{"problem":"too vague"}]}`)
	write("reviews/plan_v2.json", `{"id":"plan_v2","type":"plan_review","verdict":"approved","reviewed_at":"2024-01-15T10:09:00Z"}`)
	t2 := filepath.Join(w.Dir(), "tasks", "t2")
	if err := os.MkdirAll(filepath.Join(t2, "outputs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(t2, "outputs", "st_9.json"), []byte(`{"subtask_id":"st_9","summary":"secret of t2"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return w, dir
}

func TestReadTaskDoc(t *testing.T) {
	t.Parallel()
	w, dir := docsFixture(t)
	got, err := w.ReadTaskDoc(t.Context(), "t1", "plan.json")
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"id":"plan_t1","task_id":"t1","version":2,"summary":"v2","subtasks":[{"id":"st_1","description":"d"}],"extra":{"seed":12345678901234567890}}`; string(got) != want {
		t.Fatalf("plan.json = %s, want %s (fields and digits as written)", got, want)
	}
	if got, err := w.ReadTaskDoc(t.Context(), "t1", "plans/plan_v1.json"); err != nil || !strings.Contains(string(got), `"version":1`) {
		t.Fatalf("plans/plan_v1.json = %s, %v", got, err)
	}
	if got, err := w.ReadTaskDoc(t.Context(), "t1", "outputs/st_1.json"); err != nil || string(got) != `{"subtask_id":"st_1","summary":"done","custom":[1,2]}` {
		t.Fatalf("output = %s, %v", got, err)
	}
	if got, err := w.ReadTaskDoc(t.Context(), "t1", "reviews/plan_v2.json"); err != nil || !strings.Contains(string(got), `"verdict":"approved"`) {
		t.Fatalf("review = %s, %v", got, err)
	}

	put := func(t *testing.T, rel, data string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name    string
		setup   func(t *testing.T)
		task    string
		rel     string
		want    error
		message string
	}{
		{"missing output", nil, "t1", "outputs/st_2.json", workspace.ErrNotFound, "does not exist"},
		{"missing kept plan", nil, "t1", "plans/plan_v7.json", workspace.ErrNotFound, "does not exist"},
		{"truncated", func(t *testing.T) { put(t, "outputs/st_3.json", `{"subtask_id":"st_3","sum`) }, "t1", "outputs/st_3.json", workspace.ErrInvalid, "st_3"},
		{"empty file", func(t *testing.T) { put(t, "outputs/st_4.json", ``) }, "t1", "outputs/st_4.json", workspace.ErrInvalid, "st_4"},
		{"not an object", func(t *testing.T) { put(t, "reviews/arr.json", `[1,2]`) }, "t1", "reviews/arr.json", workspace.ErrInvalid, "schema"},
		{"schema-invalid review", func(t *testing.T) {
			put(t, "reviews/odd.json", `{"id":"odd","type":"plan_review","verdict":"maybe"}`)
		}, "t1", "reviews/odd.json", workspace.ErrInvalid, "schema"},
		{"output of another subtask", func(t *testing.T) { put(t, "outputs/st_5.json", `{"subtask_id":"st_6"}`) }, "t1", "outputs/st_5.json", workspace.ErrInvalid, `"st_6"`},
		{"plan that cannot run", func(t *testing.T) {
			put(t, "plans/plan_v3.json", `{"id":"p","task_id":"t1","version":3,"subtasks":[{"id":"a","description":"d","dependencies":["zz"]}]}`)
		}, "t1", "plans/plan_v3.json", workspace.ErrInvalid, "unknown zz"},
		{"nested too deep", func(t *testing.T) {
			put(t, "outputs/deep.json", `{"subtask_id":"deep","x":`+strings.Repeat("[", 200)+strings.Repeat("]", 200)+`}`)
		}, "t1", "outputs/deep.json", workspace.ErrUnsafe, "nested deeper"},
		{"huge", func(t *testing.T) {
			p := filepath.Join(dir, "outputs", "huge.json")
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(p, workspace.DefaultMaxFileBytes+1); err != nil {
				t.Fatal(err)
			}
		}, "t1", "outputs/huge.json", workspace.ErrUnsafe, "limit"},
		{"symlink to another task's output", func(t *testing.T) {
			if err := os.Symlink(filepath.Join("..", "..", "t2", "outputs", "st_9.json"), filepath.Join(dir, "outputs", "st_9.json")); err != nil {
				t.Fatal(err)
			}
		}, "t1", "outputs/st_9.json", workspace.ErrUnsafe, "symlink"},
		{"symlink out of the root", func(t *testing.T) {
			if err := os.Symlink("/etc/passwd", filepath.Join(dir, "reviews", "passwd.json")); err != nil {
				t.Fatal(err)
			}
		}, "t1", "reviews/passwd.json", workspace.ErrUnsafe, "symlink"},
		{"symlinked directory", func(t *testing.T) {
			if err := os.Symlink(filepath.Join("..", "t2", "outputs"), filepath.Join(dir, "plans2")); err != nil {
				t.Fatal(err)
			}
			// plans/ itself replaced by a link to t2's outputs.
			if err := os.Rename(filepath.Join(dir, "plans"), filepath.Join(dir, "plans.old")); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(filepath.Join(dir, "plans2"), filepath.Join(dir, "plans")); err != nil {
				t.Fatal(err)
			}
		}, "t1", "plans/plan_v1.json", workspace.ErrUnsafe, "not a directory of the task"},
		{"FIFO", func(t *testing.T) {
			if err := syscall.Mkfifo(filepath.Join(dir, "outputs", "fifo.json"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "t1", "outputs/fifo.json", workspace.ErrUnsafe, "FIFO"},
		{"a directory", func(t *testing.T) {
			if err := os.Mkdir(filepath.Join(dir, "outputs", "dir.json"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, "t1", "outputs/dir.json", workspace.ErrUnsafe, "directory"},
		{"parent path", nil, "t1", "../t2/outputs/st_9.json", workspace.ErrInvalid, "is not plan.json"},
		{"inner parent path", nil, "t1", "outputs/../plan.json", workspace.ErrInvalid, "is not plan.json"},
		{"absolute path", nil, "t1", "/etc/passwd", workspace.ErrInvalid, "is not plan.json"},
		{"state is not a document of agents", nil, "t1", "state.json", workspace.ErrInvalid, "is not plan.json"},
		{"dot-file", nil, "t1", "outputs/.tmp.json", workspace.ErrInvalid, "is not plan.json"},
		{"deeper path", nil, "t1", "outputs/a/b.json", workspace.ErrInvalid, "is not plan.json"},
		{"plan version zero", nil, "t1", "plans/plan_v0.json", workspace.ErrInvalid, "is not plan.json"},
		{"plan version padded", nil, "t1", "plans/plan_v01.json", workspace.ErrInvalid, "is not plan.json"},
		{"plan version not a number", nil, "t1", "plans/plan_vx.json", workspace.ErrInvalid, "is not plan.json"},
		{"nothing named", nil, "t1", "", workspace.ErrInvalid, "no document"},
		{"bad task id", nil, "../t1", "plan.json", workspace.ErrInvalid, "task id"},
		{"unknown task", nil, "t9", "plan.json", workspace.ErrNotFound, "no such task"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.setup != nil {
				c.setup(t)
			}
			got, err := w.ReadTaskDoc(t.Context(), c.task, c.rel)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.message) {
				t.Fatalf("ReadTaskDoc(%q, %q) = %s, %v; want %v saying %q", c.task, c.rel, got, err, c.want, c.message)
			}
		})
	}
}

func TestListReviews(t *testing.T) {
	t.Parallel()
	w, dir := docsFixture(t)
	// Noise beside the two reviews: each is skipped with its reason, or,
	// for temporary dot-files, silently.
	for name, data := range map[string]string{
		"broken.json":     `{"id":`,
		"undecided.json":  `{"id":"undecided","type":"plan_review","verdict":"maybe"}`,
		"deep.json":       `{"id":"deep","type":"plan_review","verdict":"approved","notes":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`,
		"notes.txt":       `not a review`,
		".plan_v3.json.1": `{"id":"plan_v3"}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, "reviews", name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join("..", "..", "t2", "outputs", "st_9.json"), filepath.Join(dir, "reviews", "link.json")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "reviews", "fifo.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	reviews, skipped, err := w.ListReviews(t.Context(), "t1")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range reviews {
		ids = append(ids, r.ID+":"+r.Verdict)
	}
	if want := []string{"plan_v1:revision_needed", "plan_v2:approved"}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("reviews = %v, want %v", ids, want)
	}
	if len(reviews[0].Issues) != 1 || reviews[0].Issues[0].Problem != "too vague" {
		t.Errorf("issues of plan_v1: %+v", reviews[0].Issues)
	}
	reasons := map[string]string{}
	for _, s := range skipped {
		reasons[s.File] = s.Reason
	}
	for file, want := range map[string]string{
		"reviews/broken.json":    "broken",
		"reviews/undecided.json": "schema",
		"reviews/deep.json":      "nested deeper",
		"reviews/notes.txt":      "is not plan.json",
		"reviews/link.json":      "symlink",
		"reviews/fifo.json":      "FIFO",
	} {
		if !strings.Contains(reasons[file], want) {
			t.Errorf("%s skipped for %q, want a reason saying %q", file, reasons[file], want)
		}
	}
	if len(skipped) != 6 {
		t.Errorf("skipped = %+v, want 6 files", skipped)
	}

	// A task without reviews/ has none; a reviews/ that leads elsewhere is
	// refused.
	if got, skipped, err := w.ListReviews(t.Context(), "t2"); err != nil || len(got) != 0 || got == nil || len(skipped) != 0 {
		t.Fatalf("t2 reviews = %v, %v, %v; want an empty list", got, skipped, err)
	}
	if err := os.Symlink(filepath.Join("..", "t1", "reviews"), filepath.Join(w.Dir(), "tasks", "t2", "reviews")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.ListReviews(t.Context(), "t2"); !errors.Is(err, workspace.ErrUnsafe) {
		t.Fatalf("reviews/ a symlink: err = %v, want ErrUnsafe", err)
	}
	for _, id := range []string{"../t1", "t9"} {
		if _, _, err := w.ListReviews(t.Context(), id); err == nil {
			t.Errorf("ListReviews(%q) succeeded", id)
		}
	}
}
