package files

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/retention"
)

func TestReadTaskInfo(t *testing.T) {
	t.Parallel()
	deep := func(n int) string {
		return `{"status": "completed", "x": ` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}`
	}
	cases := []struct {
		name  string
		state string // "" writes no state.json
		// setup, if set, prepares the task directory instead of state.
		setup func(t *testing.T, td string)
		want  retention.TaskInfo
		// errHas is a fragment StateErr must contain ("" for none).
		errHas string
	}{
		{name: "no_state", want: retention.TaskInfo{}},
		{name: "completed", state: `{"task_id": "t", "status": "completed", "completed_at": "2024-01-15T10:00:00.123Z"}`,
			want: retention.TaskInfo{Status: "completed", CompletedAt: "2024-01-15T10:00:00.123Z"}},
		{name: "completed_at_after_big_fields", state: `{"subtasks": {"a": {"b": [1, 2, {"c": null}]}}, "errors": [], "completed_at": "2024-01-15T10:00:00Z", "status": "failed", "journal_seq": 12}`,
			want: retention.TaskInfo{Status: "failed", CompletedAt: "2024-01-15T10:00:00Z"}},
		{name: "completed_at_null", state: `{"status": "executing", "completed_at": null}`,
			want: retention.TaskInfo{Status: "executing"}},
		{name: "completed_at_kept_raw", state: `{"status": "completed", "completed_at": "yesterday"}`,
			want: retention.TaskInfo{Status: "completed", CompletedAt: "yesterday"}},
		{name: "depth_64_ok", state: deep(63), want: retention.TaskInfo{Status: "completed"}},
		{name: "depth_65_refused", state: deep(64), errHas: "deeper than 64"},
		{name: "truncated", state: `{"status": "completed", "completed_at": `, errHas: "EOF"},
		{name: "not_json", state: `not json`, errHas: "invalid character"},
		{name: "not_object", state: `["completed"]`, errHas: "not a JSON object"},
		{name: "empty_file", state: " ", errHas: "EOF"},
		{name: "status_not_string", state: `{"status": 3}`, errHas: "status is a number"},
		{name: "completed_at_not_string", state: `{"status": "completed", "completed_at": 1700000000}`, errHas: "completed_at is a number"},
		{name: "no_status", state: `{"completed_at": "2024-01-15T10:00:00Z"}`, errHas: "no status"},
		{name: "trailing_data", state: `{"status": "completed"} {}`, errHas: "trailing data"},
		{name: "oversized", setup: func(t *testing.T, td string) {
			// A sparse file: over the limit without writing 16 MiB.
			f, err := os.Create(filepath.Join(td, "state.json"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := f.Truncate(MaxStateBytes + 1); err != nil {
				t.Fatal(err)
			}
		}, errHas: "over the"},
		{name: "symlink", setup: func(t *testing.T, td string) {
			if err := os.WriteFile(filepath.Join(td, "real.json"), []byte(`{"status": "completed"}`), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("real.json", filepath.Join(td, "state.json")); err != nil {
				t.Fatal(err)
			}
		}, errHas: "not a regular file"},
		{name: "directory", setup: func(t *testing.T, td string) {
			if err := os.Mkdir(filepath.Join(td, "state.json"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, errHas: "not a regular file"},
		{name: "summarised", state: `{"status": "completed"}`, setup: func(t *testing.T, td string) {
			for _, f := range []string{"task.json", "events.log", ".done.x", ".state.json123"} {
				if err := os.WriteFile(filepath.Join(td, f), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.MkdirAll(filepath.Join(td, ".locks"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, want: retention.TaskInfo{Status: "completed", Summarized: true}},
		{name: "not_summarised", state: `{"status": "completed"}`, setup: func(t *testing.T, td string) {
			for _, f := range []string{"task.json", "events.log", "plan.json"} {
				if err := os.WriteFile(filepath.Join(td, f), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}, want: retention.TaskInfo{Status: "completed"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			td := filepath.Join(dir, "tasks", "t1")
			if err := os.MkdirAll(td, 0o755); err != nil {
				t.Fatal(err)
			}
			// Any task with more than the summary files is not summarised.
			if tc.name != "summarised" && tc.name != "not_summarised" {
				if err := os.WriteFile(filepath.Join(td, "plan.json"), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tc.state != "" {
				if err := os.WriteFile(filepath.Join(td, "state.json"), []byte(tc.state), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tc.setup != nil {
				tc.setup(t, td)
			}
			root, err := os.OpenRoot(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			got, err := ReadTaskInfo(root, "t1")
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			want.ID = "t1"
			if tc.errHas != "" {
				if !strings.Contains(got.StateErr, tc.errHas) {
					t.Fatalf("StateErr %q, want it to contain %q", got.StateErr, tc.errHas)
				}
				if got.Status != "" || got.CompletedAt != "" {
					t.Errorf("unreadable state yet status %q, completed_at %q", got.Status, got.CompletedAt)
				}
				return
			}
			if got != want {
				t.Errorf("got %+v, want %+v", got, want)
			}
		})
	}

	root, err := os.OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if _, err := ReadTaskInfo(root, "missing"); err == nil {
		t.Error("a missing task directory gave no error")
	}
}
