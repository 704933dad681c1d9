package fscheck

import (
	"fmt"
	"syscall"
)

// Filesystem magic numbers (statfs f_type) where rename, flock or inotify
// cannot be trusted.
var unsafeFilesystems = map[int64]string{
	0x6969:     "NFS",
	0xFF534D42: "CIFS",
	0x517B:     "SMB",
	0xFE534D42: "SMB2",
	0x65735546: "FUSE",
}

// Check reports the filesystem of dir when it is one where
// rename, flock or inotify are not to be trusted (NFS, SMB/CIFS, FUSE):
// name is its name and unsafe is true. On a local filesystem unsafe is
// false.
func Check(dir string) (name string, unsafe bool, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return "", false, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return classifyFilesystem(int64(st.Type))
}

func classifyFilesystem(magic int64) (string, bool, error) {
	// f_type is signed on some platforms: 0xFF534D42 may come back negative.
	magic &= 0xFFFFFFFF
	if n, ok := unsafeFilesystems[magic]; ok {
		return n, true, nil
	}
	return fmt.Sprintf("0x%X", magic), false, nil
}
