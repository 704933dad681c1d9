package daemon

import (
	"fmt"
	"syscall"
)

// CheckFilesystem reports the filesystem of dir when it is one where
// rename, flock or inotify are not to be trusted (NFS, SMB/CIFS, FUSE):
// name is its name and unsafe is true. On a local filesystem unsafe is
// false.
func CheckFilesystem(dir string) (name string, unsafe bool, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return "", false, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return classifyFilesystem(int64(st.Type))
}
