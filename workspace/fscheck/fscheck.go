// Package fscheck tells a filesystem where a workspace is not safe: one
// where rename, flock or file events cannot be trusted (NFS, SMB/CIFS,
// AFP, WebDAV, FUSE). The file tree and SQLite both ask it before their
// daemon leads.
package fscheck

import (
	"errors"
	"strings"
)

// ErrUnsafe says a workspace is on such a filesystem and the daemon was
// told to refuse it (Strict).
var ErrUnsafe = errors.New("filesystem not safe for the workspace")

// Filesystem type names (statfs f_fstypename on macOS and FreeBSD) where
// rename, flock or file events cannot be trusted; FUSE goes by several
// names ("macfuse", "osxfuse", "fusefs.sshfs"), taken by prefix. Kept
// here, not in fstype_bsd.go, so that its test runs on Linux too.
var unsafeFstypenames = map[string]string{
	"nfs":    "NFS",
	"smbfs":  "SMB",
	"afpfs":  "AFP",
	"webdav": "WebDAV",
}

// classifyFstypename is Check's verdict on a type name.
func classifyFstypename(name string) (string, bool, error) {
	if n, ok := unsafeFstypenames[name]; ok {
		return n, true, nil
	}
	for _, p := range []string{"fuse", "macfuse", "osxfuse"} {
		if strings.HasPrefix(name, p) {
			return "FUSE (" + name + ")", true, nil
		}
	}
	return name, false, nil
}
