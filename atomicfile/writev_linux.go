package atomicfile

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// maxIovecs is how many buffers one writev(2) takes (IOV_MAX on Linux).
const maxIovecs = 1024

// writev writes bufs to f, in order, with writev(2): as many calls as
// there are groups of maxIovecs buffers, or more when a call writes less
// than it was given.
func writev(f *os.File, bufs [][]byte) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	for len(bufs) > 0 {
		batch := bufs[:min(len(bufs), maxIovecs)]
		var n int
		var werr error
		if err := rc.Write(func(fd uintptr) bool {
			for {
				n, werr = unix.Writev(int(fd), batch)
				if werr != unix.EINTR {
					return true
				}
			}
		}); err != nil {
			return err
		}
		if werr != nil {
			return &os.PathError{Op: "writev", Path: f.Name(), Err: werr}
		}
		if n == 0 {
			return io.ErrShortWrite
		}
		bufs = advance(bufs, n)
	}
	return nil
}

// advance drops the first n bytes of bufs: the buffers written whole, and
// the written head of the first one that was not. bufs itself is changed
// only in that buffer's slot.
func advance(bufs [][]byte, n int) [][]byte {
	for len(bufs) > 0 && n >= len(bufs[0]) {
		n -= len(bufs[0])
		bufs = bufs[1:]
	}
	if len(bufs) > 0 && n > 0 {
		bufs = append([][]byte{bufs[0][n:]}, bufs[1:]...)
	}
	return bufs
}
