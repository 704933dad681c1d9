//go:build unix

package atomicfile

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// WriteBuffersAt is WriteBuffers of name, one entry of dir, an open
// directory: no path is resolved, the temporary file (".<name><digits>",
// as WriteFile names it) is created, written, fsynced and renamed over
// name by the descriptors at hand, and dir is fsynced. The file's
// descriptor is a plain one, not registered with the runtime's poller,
// which a regular file never needs. It returns the new file's FileInfo,
// read before its rename: the file now at name, as long as no one else
// replaces it.
func WriteBuffersAt(dir *os.File, name string, bufs [][]byte, perm os.FileMode) (fi os.FileInfo, err error) {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return nil, fmt.Errorf("write %q: not a single file name", name)
	}
	dfd := int(dir.Fd())
	defer runtime.KeepAlive(dir)
	var (
		tmp string
		fd  int
	)
	for range 100 {
		tmp = "." + name + strconv.FormatUint(rand.Uint64()>>1, 10)
		fd, err = ignoringEINTR(func() (int, error) {
			return unix.Openat(dfd, tmp, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
		})
		if !errors.Is(err, unix.EEXIST) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("create temporary file for %s: %w", name, &os.PathError{Op: "open", Path: tmp, Err: err})
	}
	f := os.NewFile(uintptr(fd), tmp)
	defer func() {
		if f != nil {
			f.Close()
		}
		if err != nil {
			_ = unix.Unlinkat(dfd, tmp, 0)
		}
	}()
	if len(bufs) == 1 {
		_, err = f.Write(bufs[0])
	} else {
		err = writev(f, bufs)
	}
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", name, err)
	}
	if fi, err = f.Stat(); err == nil && fi.Mode().Perm() != perm.Perm() {
		// The umask took bits of perm: given back, so that the mode is
		// perm whatever the umask (as WriteFile's). A mode created whole
		// needs no chmod(2), nor the inotify event one makes.
		if err = f.Chmod(perm); err == nil {
			fi, err = f.Stat()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", name, err)
	}
	if err = f.Sync(); err != nil {
		return nil, fmt.Errorf("write %s: %w", name, err)
	}
	err = f.Close()
	f = nil
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", name, err)
	}
	if _, err = ignoringEINTR(func() (int, error) { return 0, unix.Renameat(dfd, tmp, dfd, name) }); err != nil {
		return nil, fmt.Errorf("replace %s: %w", name, &os.LinkError{Op: "rename", Old: tmp, New: name, Err: err})
	}
	if serr := dir.Sync(); serr != nil {
		// name is replaced: the temporary file is gone, only the
		// rename's durability is in doubt.
		return nil, fmt.Errorf("sync directory of %s: %w", name, serr)
	}
	return fi, nil
}

func ignoringEINTR(fn func() (int, error)) (int, error) {
	for {
		n, err := fn()
		if !errors.Is(err, unix.EINTR) {
			return n, err
		}
	}
}
