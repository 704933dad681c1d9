//go:build unix

package atomicfile

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// WriteBuffersAt replaces an entry of an open directory with the bytes of
// its pieces, at the mode asked whatever the umask, leaves no temporary
// file, returns the FileInfo of the file now at the name, and refuses a
// name that is not one entry or a symlink in its place.
func TestWriteBuffersAt(t *testing.T) {
	dir := t.TempDir()
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	var bufs [][]byte
	for i := range 3000 {
		bufs = append(bufs, bytes.Repeat([]byte{byte('a' + i%26)}, i%7))
	}
	for i, pieces := range [][][]byte{bufs, {[]byte("one\n")}} {
		fi, err := WriteBuffersAt(d, "f.json", pieces, 0o640)
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		got, err := os.ReadFile(filepath.Join(dir, "f.json"))
		if want := bytes.Join(pieces, nil); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("write %d: read back %d bytes (%v), want the %d written", i, len(got), err, len(want))
		}
		now, err := os.Lstat(filepath.Join(dir, "f.json"))
		if err != nil {
			t.Fatal(err)
		}
		if !os.SameFile(fi, now) || fi.Size() != now.Size() || !fi.ModTime().Equal(now.ModTime()) {
			t.Errorf("write %d: returned %v %d %v, the file is %d %v", i, fi.Name(), fi.Size(), fi.ModTime(), now.Size(), now.ModTime())
		}
		if now.Mode().Perm() != 0o640 {
			t.Errorf("write %d: mode %v, want 0640 under umask 077", i, now.Mode().Perm())
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) != 1 {
		t.Fatalf("directory holds %v (%v), want f.json alone", ents, err)
	}
	syscall.Umask(0o022)
	if fi, err := WriteBuffersAt(d, "f.json", bufs[:3], 0o644); err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("a mode the umask leaves whole: %v, %v", fi, err)
	}
	if now, err := os.Lstat(filepath.Join(dir, "f.json")); err != nil || now.Mode().Perm() != 0o644 {
		t.Errorf("mode %v (%v), want 0644", now, err)
	}
	for _, name := range []string{"", ".", "..", "sub/f.json"} {
		if _, err := WriteBuffersAt(d, name, bufs[:3], 0o640); err == nil {
			t.Errorf("WriteBuffersAt(%q) wrote, want a refusal", name)
		}
	}
	if err := os.Symlink("elsewhere", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteBuffersAt(d, "link", bufs[:3], 0o640); err != nil {
		t.Fatalf("replace a symlink: %v", err)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "link")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("link after the write: %v, %v; want a regular file in its place (the rename replaces the name, never follows it)", fi, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "elsewhere")); !os.IsNotExist(err) {
		t.Errorf("the symlink's target was written: %v", err)
	}
	ents, _ = os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("temporary file %s left", e.Name())
		}
	}
}

// A write that cannot finish says so and leaves nothing behind: here the
// open directory was removed (which refuses new files even to root).
func TestWriteBuffersAtFailsCleanly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sub")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	_, err = WriteBuffersAt(d, "f.json", [][]byte{[]byte("new\n")}, 0o644)
	if err == nil || !strings.Contains(err.Error(), "create temporary file for f.json") {
		t.Fatalf("write into a removed directory: %v, want its create refused", err)
	}
}
