//go:build linux

package bench

import (
	"io"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// On Linux an agent process keeps Go's runtime out of the measurement.
// The runtime's monitor thread wakes every 20 µs for a millisecond or more
// whenever a goroutine enters a system call, and every agent does so
// while it drops a marker. With 32 agent processes on 2 cores that came
// to about 2 ms of CPU a round of 32 markers (perf, sampled over the
// rounds alone): more than the daemon's state writes, and nothing an
// agent written in another language would add. So the agent's drop
// makes its system calls raw, which the runtime does not see, and the
// agent waits for its commands in the poller, where its goroutine parks
// and the monitor can sleep. The system calls are the same as os would
// make: only the bookkeeping around them is gone.

// quietStdin returns in, read without entering the runtime's system call
// path: a pipe (what the harness gives its agents) is read raw through a
// non-blocking duplicate of its descriptor, waiting for data in the
// poller. Anything else is returned as it is: a terminal, say, would be
// left non-blocking for the shell after the agent exits.
func quietStdin(in io.Reader) io.Reader {
	f, ok := in.(*os.File)
	if !ok {
		return in
	}
	if fi, err := f.Stat(); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		return in
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return in
	}
	fd := -1
	if cerr := rc.Control(func(sfd uintptr) {
		fd, err = unix.FcntlInt(sfd, unix.F_DUPFD_CLOEXEC, 0)
	}); cerr != nil || err != nil {
		return in
	}
	// O_NONBLOCK belongs to the open file, shared with in: in is not to
	// be read directly any more.
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return in
	}
	nf := os.NewFile(uintptr(fd), f.Name()) // non-blocking: in the poller
	rrc, err := nf.SyscallConn()
	if err != nil {
		nf.Close()
		return in
	}
	return &rawReader{f: nf, rc: rrc}
}

// rawReader reads a non-blocking file with raw read(2) calls.
type rawReader struct {
	f  *os.File // kept so that the descriptor stays registered
	rc interface {
		Read(func(fd uintptr) bool) error
	}
}

func (r *rawReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var (
		n     uintptr
		errno unix.Errno
	)
	err := r.rc.Read(func(fd uintptr) bool {
		for {
			n, _, errno = unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			switch errno {
			case unix.EINTR:
				continue
			case unix.EAGAIN:
				return false // wait in the poller, then call again
			}
			return true
		}
	})
	switch {
	case err != nil:
		return 0, err
	case errno != 0:
		return 0, &os.PathError{Op: "read", Path: r.f.Name(), Err: errno}
	case n == 0:
		return 0, io.EOF
	}
	return int(n), nil
}

// dropMarker renames tmp to name, both in dir, and fsyncs dir: the
// atomic drop of a marker, as raw system calls.
func dropMarker(dir, tmp, name string) error {
	d, err := unix.BytePtrFromString(dir)
	if err != nil {
		return err
	}
	from, err := unix.BytePtrFromString(dir + "/" + tmp)
	if err != nil {
		return err
	}
	to, err := unix.BytePtrFromString(dir + "/" + name)
	if err != nil {
		return err
	}
	cwd := unix.AT_FDCWD
	if _, _, e := unix.RawSyscall6(unix.SYS_RENAMEAT2, uintptr(cwd), uintptr(unsafe.Pointer(from)),
		uintptr(cwd), uintptr(unsafe.Pointer(to)), 0, 0); e != 0 {
		return &os.LinkError{Op: "rename", Old: dir + "/" + tmp, New: dir + "/" + name, Err: e}
	}
	fd, _, e := unix.RawSyscall6(unix.SYS_OPENAT, uintptr(cwd), uintptr(unsafe.Pointer(d)),
		unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0, 0, 0)
	if e != 0 {
		return &os.PathError{Op: "open", Path: dir, Err: e}
	}
	_, _, e = unix.RawSyscall(unix.SYS_FSYNC, fd, 0, 0)
	_, _, ce := unix.RawSyscall(unix.SYS_CLOSE, fd, 0, 0)
	if e != 0 {
		return &os.PathError{Op: "sync", Path: dir, Err: e}
	}
	if ce != 0 {
		return &os.PathError{Op: "close", Path: dir, Err: ce}
	}
	return nil
}
