package daemon

import (
	"fmt"
	"strings"
)

// Filesystem magic numbers (Linux's statfs f_type) where rename, flock or
// inotify cannot be trusted.
var unsafeFilesystems = map[int64]string{
	0x6969:     "NFS",
	0xFF534D42: "CIFS",
	0x517B:     "SMB",
	0xFE534D42: "SMB2",
	0x65735546: "FUSE",
}

// Filesystem type names (statfs f_fstypename on macOS and FreeBSD) where
// rename, flock or file events cannot be trusted; FUSE goes by several
// names ("macfuse", "osxfuse", "fusefs.sshfs"), taken by prefix.
var unsafeFstypenames = map[string]string{
	"nfs":    "NFS",
	"smbfs":  "SMB",
	"afpfs":  "AFP",
	"webdav": "WebDAV",
}

func classifyFilesystem(magic int64) (string, bool, error) {
	// f_type is signed on some platforms: 0xFF534D42 may come back negative.
	magic &= 0xFFFFFFFF
	if n, ok := unsafeFilesystems[magic]; ok {
		return n, true, nil
	}
	return fmt.Sprintf("0x%X", magic), false, nil
}

// classifyFstypename is classifyFilesystem for a type name.
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
