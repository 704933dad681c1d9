package files

import "strings"

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

// classifyFstypename is CheckFilesystem's verdict on a type name.
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
