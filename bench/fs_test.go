package bench

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const mountinfo = `22 1 252:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard
30 22 0:26 / /tmp rw,nosuid,nodev shared:5 - tmpfs tmpfs rw,size=100k
31 22 7:0 / /mnt/with\040space rw,relatime - ext4 /dev/loop0 rw
40 22 0:30 / /srv rw - xfs /dev/sdb1 rw,attr2
41 22 7:1 / /srv rw,noatime - ext4 /dev/loop1 rw,data=ordered
garbage line
`

func TestMountOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, path              string
		mp, typ, source, option string
	}{
		{"the root", "/home/x", "/", "ext4", "/dev/vda", "rw,relatime; rw,discard"},
		{"a mount point itself", "/tmp", "/tmp", "tmpfs", "tmpfs", "rw,nosuid,nodev; rw,size=100k"},
		{"below a mount", "/tmp/a/b", "/tmp", "tmpfs", "tmpfs", ""},
		{"a prefix that is no parent", "/tmpx", "/", "ext4", "/dev/vda", ""},
		{"an escaped space", "/mnt/with space/d", "/mnt/with space", "ext4", "/dev/loop0", "rw,relatime; rw"},
		{"the later of two mounts on one point", "/srv/w", "/srv", "ext4", "/dev/loop1", "rw,noatime; rw,data=ordered"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, ok := mountOf(mountinfo, tt.path)
			if !ok {
				t.Fatalf("no mount found for %s", tt.path)
			}
			if f.MountPoint != tt.mp || f.Type != tt.typ || f.Source != tt.source || (tt.option != "" && f.Options != tt.option) {
				t.Errorf("mountOf(%s) = %+v, want %s %s on %s (%s)", tt.path, f, tt.typ, tt.source, tt.mp, tt.option)
			}
		})
	}
	if _, ok := mountOf("garbage\n", "/x"); ok {
		t.Errorf("a mount found in garbage")
	}
}

func TestHasJournal(t *testing.T) {
	t.Parallel()
	with := "Filesystem volume name:   <none>\nFilesystem features:      has_journal ext_attr resize_inode dir_index\nInode count: 65536\n"
	without := "Filesystem features:      ext_attr resize_inode dir_index filetype\n"
	if !hasJournal(with) || hasJournal(without) || hasJournal("") {
		t.Errorf("hasJournal: with %v, without %v, empty %v; want true, false, false", hasJournal(with), hasJournal(without), hasJournal(""))
	}
}

// TestDescribeFS: the directory of a test is on some filesystem that
// mountinfo names (on Linux).
func TestDescribeFS(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/mountinfo"); err != nil {
		t.Skip("no /proc/self/mountinfo here")
	}
	dir := t.TempDir()
	f := describeFS(dir)
	if f.Type == "" || !within(mustEval(t, dir), f.MountPoint) {
		t.Errorf("describeFS(%s) = %+v, want the mount holding it", dir, f)
	}
	if s := f.String(); !strings.Contains(s, f.Type) || !strings.Contains(s, f.Options) {
		t.Errorf("String() = %q, want the type and options", s)
	}
}

func mustEval(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestMountExt4NeedsRoot: without root it refuses before making anything.
func TestMountExt4NeedsRoot(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	e, err := MountExt4(context.Background(), parent, Ext4Size, false)
	if !errors.Is(err, ErrNeedsRoot) || e != nil {
		t.Fatalf("MountExt4 without root = %v, %v; want ErrNeedsRoot", e, err)
	}
	if left, _ := os.ReadDir(parent); len(left) != 0 {
		t.Errorf("left %d files in %s", len(left), parent)
	}
}
