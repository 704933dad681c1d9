package clitest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/workspaced/workspaced/bench"
	"github.com/workspaced/workspaced/internal/optdep"
)

// SmallExt4 makes an ext4 image of size bytes, loop-mounts it on a fresh
// directory (bench.MountExt4, as `bench --ext4` does) and returns that
// directory; t.Cleanup unmounts it and removes the image. It skips the
// test, saying why, when the process is not root, mkfs.ext4 or mount is
// missing or no loop device can be had.
func SmallExt4(t testing.TB, size int64) string {
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

// Fill writes dir/filler until the filesystem refuses another byte with
// ENOSPC; removing that file frees the room again.
func Fill(t testing.TB, dir string) {
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
