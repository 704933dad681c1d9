package files

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/workspaced/workspaced/workspace"
)

// TestReadProductAt checks that reading a product through the open task
// directory gives what ReadProduct gives, refusals included.
func TestReadProductAt(t *testing.T) {
	t.Parallel()
	w, _ := newWS(t)
	newTask(t, w, "t1")
	newTask(t, w, "t2")
	if _, err := w.WriteOutput(t.Context(), "t1", "st_1", "worker_1", []byte(`{"summary":"ok"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteOutput(t.Context(), "t2", "st_9", "worker_1", []byte(`{"summary":"other task"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteReview(t.Context(), "t1", "plan_v1", "reviewer", []byte(`{"type":"plan_review","verdict":"approved"}`)); err != nil {
		t.Fatal(err)
	}
	t1 := filepath.Join(w.Dir(), "tasks", "t1")
	if err := os.WriteFile(filepath.Join(t1, "outputs", "st_2.json"), []byte(`{"summary":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(t1, "outputs", "st_3.json"), []byte(`{"subtask_id":"st_4","summary":"x","worker_id":"w","completed_at":"2024-01-15T10:00:00Z"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("st_1.json", filepath.Join(t1, "outputs", "st_5.json")); err != nil {
		t.Fatal(err)
	}
	// reviews/ of t1 leads into t2's outputs.
	if err := os.RemoveAll(filepath.Join(t1, "reviews")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..", "t2", "outputs"), filepath.Join(t1, "reviews")); err != nil {
		t.Fatal(err)
	}
	td, err := w.Root().Open(workspace.TaskDir("t1"))
	if err != nil {
		t.Fatal(err)
	}
	defer td.Close()
	for _, tc := range []struct {
		name, file string
		want       error // nil: read, with an output or none
	}{
		{"output", "outputs/st_1.json", nil},
		{"cancel names nothing", "", nil},
		{"missing", "outputs/st_7.json", workspace.ErrNotFound},
		{"schema-invalid", "outputs/st_2.json", workspace.ErrInvalid},
		{"another subtask's id", "outputs/st_3.json", workspace.ErrInvalid},
		{"symlink", "outputs/st_5.json", workspace.ErrUnsafe},
		{"through a symlinked directory", "reviews/st_9.json", workspace.ErrUnsafe},
		{"not a product path", "../t2/outputs/st_9.json", workspace.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p1, err1 := w.ReadProduct(t.Context(), "t1", tc.file)
			p2, err2 := w.ReadProductAt(td, tc.file)
			for _, err := range []error{err1, err2} {
				if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
					t.Errorf("ReadProduct / ReadProductAt(%q): errs %v / %v, want %v", tc.file, err1, err2, tc.want)
				}
			}
			if (err1 == nil) != (err2 == nil) || p1.Kind != p2.Kind || (p1.Output == nil) != (p2.Output == nil) {
				t.Errorf("ReadProduct = %+v, %v; ReadProductAt = %+v, %v", p1, err1, p2, err2)
			}
			if err1 != nil && err2 != nil && describeErr(err1) != describeErr(err2) {
				t.Errorf("reasons differ: %q vs %q", describeErr(err1), describeErr(err2))
			}
		})
	}
}

// describeErr is an error's words without the path it names.
func describeErr(err error) string {
	var we *workspace.Error
	if errors.As(err, &we) {
		s := we.Msg
		if we.Err != nil {
			s += ": " + we.Err.Error()
		}
		return s
	}
	return err.Error()
}
