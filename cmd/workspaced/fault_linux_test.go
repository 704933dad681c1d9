package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/workspaced/workspaced/bench"
	"github.com/workspaced/workspaced/internal/optdep"
)

// smallExt4 makes an ext4 image of size bytes, loop-mounts it on a fresh
// directory (bench.MountExt4, as `bench --ext4` does) and returns that
// directory; t.Cleanup unmounts it and removes the image. It skips the
// test, saying why, when the process is not root, mkfs.ext4 or mount is
// missing or no loop device can be had.
func smallExt4(t *testing.T, size int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		optdep.Skip(t, "loop mounts", "skipped: loop-mounting an ext4 image needs root")
	}
	if _, err := exec.LookPath("mkfs.ext4"); err != nil {
		optdep.Skip(t, "loop mounts", "skipped: mkfs.ext4 not found (Debian package e2fsprogs; .ci/run installs it)")
	}
	if _, err := exec.LookPath("mount"); err != nil {
		optdep.Skip(t, "loop mounts", "skipped: mount not found (Debian package mount; .ci/run installs it)")
	}
	e, err := bench.MountExt4(context.Background(), t.TempDir(), size, true)
	if err != nil {
		optdep.Skipf(t, "loop mounts", "skipped: cannot loop-mount an ext4 image (no loop device free or allowed?): %v", err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	})
	return e.Dir
}

// fill writes a file in dir until the filesystem refuses another byte
// with ENOSPC.
func fill(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, chunk := range []int{1 << 20, 4096, 1} {
		buf := make([]byte, chunk)
		for {
			_, err := f.Write(buf)
			if err == nil {
				continue
			}
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill %s: %v", dir, err)
			}
			break
		}
	}
	// Blocks are reserved at write time; fsync to be sure none is
	// promised that a later write could still take.
	if err := f.Sync(); err != nil && !errors.Is(err, syscall.ENOSPC) {
		t.Fatal(err)
	}
}

// onExt4 is a workspace initialised on a small loop-mounted ext4, with
// task t1 and one env entry (so env/ and its .locks/ exist).
func onExt4(t *testing.T) (*ws, string) {
	t.Helper()
	mnt := smallExt4(t, 32<<20)
	w := &ws{t: t, root: filepath.Join(mnt, "workspace"), dir: mnt}
	w.env = append(cleanEnv(), "WORKSPACE_ROOT="+w.root)
	w.ok("init")
	w.task("t1")
	w.ok("env", "store", "--task", "t1", "--key", "seed", "--description", "d", "--value", `"s"`)
	return w, mnt
}

// TestWriteOnFullDisk: a write that meets ENOSPC fails with the
// full-disk hint and leaves the tree as it was — no temporary file, no
// half entry. Every write below gets as far as its temporary file (its
// directory and lock file exist before the disk fills up).
func TestWriteOnFullDisk(t *testing.T) {
	w, mnt := onExt4(t)
	w.ok("env", "store", "--task", "t1", "--key", "big", "--description", "d", "--value", "1")
	if r := w.runIn(`{"summary": "first"}`, "output", "write", "--task", "t1", "--subtask", "st_0", "--agent", "w1", "--file", "-"); r.code != 0 {
		t.Fatalf("output write: %v", r)
	}
	before := w.tree()
	fill(t, mnt)
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
			r := w.runIn(stdin, tc.args...)
			checkFailure(t, r, exitFailure, "no space left on device", tc.args)
			if !strings.Contains(r.stderr, "\nhint: the filesystem is full") {
				t.Fatalf("no full-disk hint:\n%v", r)
			}
			sameTree(t, before, w.tree(), "a write on a full disk")
		})
	}
	// Reading still works.
	if got := w.ok("env", "get", "--task", "t1", "--key", "seed"); got != "\"s\"\n" {
		t.Fatalf("env get = %q", got)
	}
}

// TestWriteOnReadOnlyFilesystem: a write on a filesystem remounted
// read-only fails with the remount hint and changes nothing; reads work.
func TestWriteOnReadOnlyFilesystem(t *testing.T) {
	w, mnt := onExt4(t)
	before := w.tree()
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
			r := w.run(args...)
			checkFailure(t, r, exitFailure, "read-only file system", args)
			if !strings.Contains(r.stderr, "\nhint: the filesystem is mounted read-only: remount it read-write") {
				t.Fatalf("no read-only hint:\n%v", r)
			}
		})
	}
	sameTree(t, before, w.tree(), "writes on a read-only filesystem")
	if got := w.ok("env", "get", "--task", "t1", "--key", "seed"); got != "\"s\"\n" {
		t.Fatalf("env get = %q", got)
	}
}
