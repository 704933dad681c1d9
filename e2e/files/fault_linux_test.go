package files_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"
)

// exitFailure is workspaced's exit code for a failure that is not a
// usage mistake, a missing thing or a conflict.
const exitFailure = 1

// onExt4 is a workspace initialised on a small loop-mounted ext4, with
// task t1 and one env entry (so env/ and its .locks/ exist).
func onExt4(t *testing.T) (*clitest.WS, string) {
	t.Helper()
	mnt := clitest.SmallExt4(t, 32<<20)
	w := clitest.NewDir(t, mnt)
	w.Dir = mnt
	w.Task("t1")
	w.Ok("env", "store", "--task", "t1", "--key", "seed", "--description", "d", "--value", `"s"`)
	return w, mnt
}

// TestWriteOnFullDisk: a write that meets ENOSPC fails with the
// full-disk hint and leaves the tree as it was — no temporary file, no
// half entry. Every write below gets as far as its temporary file (its
// directory and lock file exist before the disk fills up).
func TestWriteOnFullDisk(t *testing.T) {
	t.Parallel()
	w, mnt := onExt4(t)
	w.Ok("env", "store", "--task", "t1", "--key", "big", "--description", "d", "--value", "1")
	if r := w.RunIn(`{"summary": "first"}`, "output", "write", "--task", "t1", "--subtask", "st_0", "--agent", "w1", "--file", "-"); r.Code != 0 {
		t.Fatalf("output write: %v", r)
	}
	before := w.Tree()
	clitest.Fill(t, mnt)
	big := `"` + strings.Repeat("x", 64<<10) + `"`
	tests := []struct {
		name string
		args []string
	}{
		{"env store", []string{"env", "store", "--task", "t1", "--key", "big", "--description", "d", "--value", big}},
		{"env update", []string{"env", "update", "--task", "t1", "--key", "seed", "--value", big}},
		{"output write", []string{"output", "write", "--task", "t1", "--subtask", "st_1", "--agent", "w1", "--file", "-"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stdin := ""
			if tc.args[0] == "output" {
				stdin = `{"summary": ` + big + `}`
			}
			r := w.RunIn(stdin, tc.args...)
			clitest.CheckFailure(t, r, exitFailure, "no space left on device", tc.args)
			if !strings.Contains(r.Stderr, "\nhint: the filesystem is full") {
				t.Fatalf("no full-disk hint:\n%v", r)
			}
			clitest.SameTree(t, before, w.Tree(), "a write on a full disk")
		})
	}
	// Reading still works.
	if got := w.Ok("env", "get", "--task", "t1", "--key", "seed"); got != "\"s\"\n" {
		t.Fatalf("env get = %q", got)
	}
}

// TestWriteOnReadOnlyFilesystem: a write on a filesystem remounted
// read-only fails with the remount hint and changes nothing; reads work.
func TestWriteOnReadOnlyFilesystem(t *testing.T) {
	t.Parallel()
	w, mnt := onExt4(t)
	before := w.Tree()
	if out, err := exec.Command("mount", "-o", "remount,ro", mnt).CombinedOutput(); err != nil {
		t.Fatalf("remount read-only: %v: %s", err, out)
	}
	tests := [][]string{
		{"env", "store", "--task", "t1", "--key", "k2", "--description", "d", "--value", "1"},
		{"task", "create", "--id", "t2", "--description", "another"},
		{"claim", "--task", "t1", "--agent", "w1", "--subtask", "st_1"},
	}
	for _, args := range tests {
		t.Run(args[0], func(t *testing.T) {
			r := w.Run(args...)
			clitest.CheckFailure(t, r, exitFailure, "read-only file system", args)
			if !strings.Contains(r.Stderr, "\nhint: the filesystem is mounted read-only: remount it read-write") {
				t.Fatalf("no read-only hint:\n%v", r)
			}
		})
	}
	clitest.SameTree(t, before, w.Tree(), "writes on a read-only filesystem")
	if got := w.Ok("env", "get", "--task", "t1", "--key", "seed"); got != "\"s\"\n" {
		t.Fatalf("env get = %q", got)
	}
}
