package fscheck

import (
	"testing"

	_ "github.com/workspaced/workspaced/internal/raceexit"
)

// The type names statfs gives on macOS and FreeBSD, network and FUSE ones
// unsafe, local ones safe.
func TestClassifyFstypename(t *testing.T) {
	for _, c := range []struct {
		typ, name string
		unsafe    bool
	}{
		{"apfs", "apfs", false},
		{"hfs", "hfs", false},
		{"ufs", "ufs", false},
		{"zfs", "zfs", false},
		{"tmpfs", "tmpfs", false},
		{"nfs", "NFS", true},
		{"smbfs", "SMB", true},
		{"afpfs", "AFP", true},
		{"webdav", "WebDAV", true},
		{"macfuse", "FUSE (macfuse)", true},
		{"osxfuse", "FUSE (osxfuse)", true},
		{"fusefs", "FUSE (fusefs)", true},
		{"fusefs.sshfs", "FUSE (fusefs.sshfs)", true},
	} {
		name, unsafe, err := classifyFstypename(c.typ)
		if err != nil || name != c.name || unsafe != c.unsafe {
			t.Errorf("%s: %q, unsafe %v (%v), want %q, unsafe %v", c.typ, name, unsafe, err, c.name, c.unsafe)
		}
	}
}
