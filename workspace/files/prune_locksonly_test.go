package files

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/workspaced/workspaced/retention"
	"github.com/workspaced/workspaced/vocab"
)

// TestDecideLocksOnly: a directory holding nothing but lock files is
// removed whatever the policy, and before any other rule.
func TestDecideLocksOnly(t *testing.T) {
	t.Parallel()
	for _, p := range []retention.Policy{retention.DefaultPolicy(), {FullDays: 0, SummaryDays: retention.MaxDays}} {
		d := retention.Decide(retention.TaskInfo{ID: "gone", LocksOnly: true, Summarized: true}, p, pruneNow)
		if d.Action != retention.Remove || d.Reason != retention.ReasonLocksOnly || d.Age != 0 {
			t.Errorf("policy %+v: %+v, want remove with %q", p, d, retention.ReasonLocksOnly)
		}
	}
	if d := retention.Decide(retention.TaskInfo{ID: "t"}, retention.DefaultPolicy(), pruneNow); d.Action != retention.Keep {
		t.Errorf("an empty task directory: %+v, want keep", d)
	}
}

// TestReadTaskInfoLocksOnly: only a directory whose one entry is .locks/,
// holding nothing but regular files (a bounded number), is locks-only.
func TestReadTaskInfoLocksOnly(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		setup func(t *testing.T, td string)
		want  bool
	}{
		{"one lock file", locks("task.lock"), true},
		{"several lock files", locks("task.lock", "plan.json.lock", "n.lock"), true},
		{"empty .locks", locks(), true},
		{"as many lock files as taken at once", locks(numbered(maxLockFiles)...), true},
		{"more lock files than taken at once", locks(numbered(maxLockFiles + 1)...), false},
		{"empty directory (a task being created)", func(*testing.T, string) {}, false},
		{"a temporary file beside", both(locks("task.lock"), file(".state.json123")), false},
		{"task.json beside", both(locks("task.lock"), file("task.json")), false},
		{"events.log beside", both(locks("task.lock"), file("events.log")), false},
		{"an empty directory beside", both(locks("task.lock"), dir("env")), false},
		{"a directory in .locks", both(locks("task.lock"), dir(".locks/sub")), false},
		{"a symlink in .locks", both(locks("task.lock"), link("task.lock", ".locks/other.lock")), false},
		{"a FIFO in .locks", both(locks("task.lock"), fifo(".locks/f.lock")), false},
		{".locks is a symlink", both(dir("../elsewhere"), link("../elsewhere", ".locks")), false},
		{".locks is a file", file(".locks"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			td := filepath.Join(dir, "tasks", "x")
			if err := os.MkdirAll(td, 0o755); err != nil {
				t.Fatal(err)
			}
			tc.setup(t, td)
			root, err := os.OpenRoot(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			info, err := ReadTaskInfo(root, "x")
			if err != nil {
				t.Fatal(err)
			}
			if info.LocksOnly != tc.want {
				t.Fatalf("LocksOnly = %v, want %v (%+v)", info.LocksOnly, tc.want, info)
			}
		})
	}
}

// TestPruneTidiesLocksOnly: cleanup removes a task directory holding
// nothing but lock files, and reports it; never one with anything else,
// never one whose lock a process holds, and a dry run changes nothing.
func TestPruneTidiesLocksOnly(t *testing.T) {
	t.Parallel()
	dir, root := buildTree(t, []taskSpec{
		{id: "active", status: vocab.StatusExecuting},
		{id: "done_1d", status: vocab.StatusCompleted, completedAt: at(retention.Day)},
	})
	tasks := filepath.Join(dir, "tasks")
	for _, step := range []func() error{
		lockFilesIn(tasks, "gone_free", "task.lock", "plan.json.lock"),
		lockFilesIn(tasks, "gone_busy", "task.lock", "n.lock"),
		lockFilesIn(tasks, "gone_empty_locks"),
		lockFilesIn(tasks, "with_file", "task.lock"),
		func() error {
			return os.WriteFile(filepath.Join(tasks, "with_file", "notes.txt"), []byte("keep me"), 0o644)
		},
		lockFilesIn(tasks, "with_temp", "task.lock"),
		func() error {
			return os.WriteFile(filepath.Join(tasks, "with_temp", ".task.json123"), []byte("{"), 0o644)
		},
		func() error { return os.Mkdir(filepath.Join(tasks, "creating"), 0o755) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	// A process holds one of gone_busy's locks (not task.lock).
	holder, release := startHolder(t, filepath.Join(tasks, "gone_busy", ".locks", "n.lock"), "late_worker")
	defer func() {
		if release != nil {
			release()
		}
	}()
	before := snapshot(t, dir)

	dry := newPruner(root, dir)
	dry.DryRun = true
	rep, err := dry.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(rep.Removed); !slices.Equal(got, []string{"gone_empty_locks", "gone_free"}) {
		t.Fatalf("dry run: removed %v", got)
	}
	if diff := diffSnapshots(before, snapshot(t, dir)); diff != "" {
		t.Fatalf("dry run changed the tree:\n%s", diff)
	}

	rep, err = newPruner(root, dir).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(rep.Removed); !slices.Equal(got, []string{"gone_empty_locks", "gone_free"}) {
		t.Fatalf("removed %v, want the two free lock-only directories", got)
	}
	for _, d := range rep.Removed {
		if d.Reason != retention.ReasonLocksOnly {
			t.Errorf("%s: reason %q", d.TaskID, d.Reason)
		}
	}
	if len(rep.Skipped) != 1 || rep.Skipped[0].TaskID != "gone_busy" ||
		!strings.Contains(rep.Skipped[0].Reason, "busy") || !strings.Contains(rep.Skipped[0].Reason, "pid "+strconv.Itoa(holder.Process.Pid)) ||
		!strings.Contains(rep.Skipped[0].Reason, "late_worker") {
		t.Fatalf("skipped %+v, want gone_busy as busy naming its holder", rep.Skipped)
	}
	if got := ids(rep.Kept); !slices.Equal(got, []string{"active", "creating", "done_1d", "with_file", "with_temp"}) {
		t.Fatalf("kept %v", got)
	}
	if len(rep.Errors) > 0 {
		t.Fatalf("errors: %v", rep.Errors)
	}
	after := snapshot(t, dir)
	for p := range before {
		gone := strings.HasPrefix(p, "tasks/gone_free") || strings.HasPrefix(p, "tasks/gone_empty_locks")
		_, still := after[p]
		switch {
		case gone && still:
			t.Errorf("%s is still there", p)
		case !gone && !still:
			t.Errorf("%s was removed", p)
		}
	}
	if l := leftovers(t, dir); len(l) > 0 {
		t.Errorf("leftovers: %v", l)
	}

	// Once its lock is released, the next run removes it.
	release()
	release = nil
	rep, err = newPruner(root, dir).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(rep.Removed); !slices.Equal(got, []string{"gone_busy"}) {
		t.Fatalf("after release: removed %v", got)
	}
	if _, err := os.Lstat(filepath.Join(tasks, "gone_busy")); !os.IsNotExist(err) {
		t.Fatalf("gone_busy still there: %v", err)
	}
}

// lockFilesIn makes tasks/<id>/.locks/ holding the named (empty) lock
// files.
func lockFilesIn(tasks, id string, names ...string) func() error {
	return func() error {
		if err := os.MkdirAll(filepath.Join(tasks, id, ".locks"), 0o755); err != nil {
			return err
		}
		for _, n := range names {
			if err := os.WriteFile(filepath.Join(tasks, id, ".locks", n), nil, 0o644); err != nil {
				return err
			}
		}
		return nil
	}
}

func locks(names ...string) func(t *testing.T, td string) {
	return func(t *testing.T, td string) {
		t.Helper()
		if err := lockFilesIn(filepath.Dir(td), filepath.Base(td), names...)(); err != nil {
			t.Fatal(err)
		}
	}
}

func numbered(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("l%d.lock", i)
	}
	return out
}

func both(a, b func(*testing.T, string)) func(*testing.T, string) {
	return func(t *testing.T, td string) { a(t, td); b(t, td) }
}

func file(name string) func(*testing.T, string) {
	return func(t *testing.T, td string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(td, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func dir(name string) func(*testing.T, string) {
	return func(t *testing.T, td string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(td, name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func link(target, name string) func(*testing.T, string) {
	return func(t *testing.T, td string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(td, name)); err != nil {
			t.Fatal(err)
		}
	}
}

func fifo(name string) func(*testing.T, string) {
	return func(t *testing.T, td string) {
		t.Helper()
		if err := syscall.Mkfifo(filepath.Join(td, name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
