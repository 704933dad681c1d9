package livesocket

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
)

// The daemon's socket as a file, for systems without Linux's abstract
// namespace (macOS, FreeBSD). It is compiled everywhere so that its tests
// run on Linux too.

// liveSocketPath is the socket file, in base/workspaced-<uid>/, of the
// daemon serving the root with device dev and inode ino. The name is short
// enough for sun_path (104 bytes on macOS) under a short base such as /tmp.
func liveSocketPath(base string, uid int, dev, ino uint64) string {
	return filepath.Join(base, fmt.Sprintf("workspaced-%d", uid), fmt.Sprintf("%x-%x.sock", dev, ino))
}

// listenLiveFile listens on the socket file path. Its directory is made
// the user's own (0700) and refused when it is not: another user could
// otherwise stand in for the daemon. A file left at path by a daemon that
// died is removed first; no live daemon can own it, since the caller
// holds the root's lock. Closing the listener removes the file.
func listenLiveFile(path string) (net.Listener, error) {
	dir := filepath.Dir(path)
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("make the socket's directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 || !ok || int(st.Uid) != os.Getuid() {
		return nil, fmt.Errorf("%s is not a directory of this user's alone (mode %s): remove it", dir, fi.Mode())
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("remove the socket left by a stopped daemon: %w", err)
	}
	return net.Listen("unix", path)
}
