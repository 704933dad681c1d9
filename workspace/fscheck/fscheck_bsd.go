//go:build darwin || freebsd

package fscheck

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Check reports the filesystem of dir when it is one where
// rename, flock or file events are not to be trusted (NFS, SMB, AFP,
// WebDAV, FUSE), told by the type name statfs gives: name is its name
// and unsafe is true. On a local filesystem unsafe is false.
func Check(dir string) (name string, unsafe bool, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return "", false, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return classifyFstypename(unix.ByteSliceToString(st.Fstypename[:]))
}
