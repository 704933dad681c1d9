package backup

import (
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestAddMakesTheDirectoryWhenMissing: Add makes Dir (with DirPerm) only
// when it is missing, also after it was removed between two Adds and on
// the copy fallback, and the backup keeps its first name.
func TestAddMakesTheDirectoryWhenMissing(t *testing.T) {
	for _, copied := range []bool{false, true} {
		t.Run(fmt.Sprintf("copied=%v", copied), func(t *testing.T) {
			s, root := newSet(t, 10, time.Second)
			s.DirPerm = 0o700
			if copied {
				s.link = func(o, n string) error { return &os.LinkError{Op: "link", Old: o, New: n, Err: syscall.EXDEV} }
			}
			for i := range 2 {
				write(t, root, fmt.Sprintf(`{"version": %d}`+"\n", i))
				b, err := s.Add(src)
				if err != nil {
					t.Fatal(err)
				}
				if want := Name("state_", t0.Add(time.Duration(i)*time.Second), 0); b.Name != want {
					t.Fatalf("backup %d named %s, want %s", i, b.Name, want)
				}
				fi, err := root.Lstat(s.Dir)
				if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
					t.Fatalf("backup directory after Add %d: %v, %v; want a directory of mode 0700", i, fi, err)
				}
				if data, err := s.Read(b.Name); err != nil || string(data) != fmt.Sprintf(`{"version": %d}`+"\n", i) {
					t.Fatalf("backup %d reads %q, %v", i, data, err)
				}
				if err := root.RemoveAll(s.Dir); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
