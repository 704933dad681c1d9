// Package livesocket is how a running daemon answers status with what
// cannot be read from the workspace itself (workspace.Live): a Unix
// socket named after the device and inode of the root directory or the
// database file, which only the daemon holding that workspace serves.
package livesocket

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// A running daemon answers on a Unix socket named after the root
// directory's device and inode, with what status cannot read from the
// tree: the tasks stopped by an error and why, the tasks it cannot watch,
// the entries of tasks/ it refuses, its wake-up source, and when it last
// rescanned. On Linux the socket is in the abstract namespace and has no
// file; elsewhere it is a file in a directory of the user's own under /tmp
// (live_other.go). Either way it writes nothing and holds nothing open on
// the workspace's filesystem; it only answers, with one JSON document per
// connection, and takes no input.

// ErrNoLive: no daemon answers for the root.
var ErrNoLive = errors.New("no daemon answers for this root")

// rootID is the device and inode of root, which name its daemon's socket.
func rootID(root string) (dev, ino uint64, err error) {
	var st syscall.Stat_t
	if err := syscall.Stat(root, &st); err != nil {
		return 0, 0, fmt.Errorf("stat %s: %w", root, err)
	}
	return uint64(st.Dev), uint64(st.Ino), nil
}

// listenLive opens the daemon's socket. A second daemon of the same root
// cannot get this far (it holds no root lock).
func listenLive(root string) (net.Listener, error) {
	addr, err := liveAddr(root)
	if err != nil {
		return nil, err
	}
	return listenAddr(addr)
}

// Serve answers Read(path) with report() until the returned
// Closer is closed: the socket is named after path's device and inode (a
// root directory, or a database file), so the caller must hold what makes
// it the one daemon of path.
func Serve(path string, report func() workspace.Live) (io.Closer, error) {
	ln, err := listenLive(path)
	if err != nil {
		return nil, err
	}
	go serveLive(ln, report)
	return ln, nil
}

// serveLive answers every connection with the latest report until ln is
// closed.
func serveLive(ln net.Listener, report func() workspace.Live) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		_ = c.SetWriteDeadline(time.Now().Add(time.Second))
		_ = json.NewEncoder(c).Encode(report())
		c.Close()
	}
}

// Read asks the daemon serving root for its report. It fails with
// ErrNoLive when none answers.
func Read(root string) (workspace.Live, error) {
	addr, err := liveAddr(root)
	if err != nil {
		return workspace.Live{}, err
	}
	c, err := net.DialTimeout("unix", addr, time.Second)
	if err != nil {
		return workspace.Live{}, fmt.Errorf("%w: %v", ErrNoLive, err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	var l workspace.Live
	if err := json.NewDecoder(c).Decode(&l); err != nil {
		return workspace.Live{}, fmt.Errorf("read the daemon's report: %w", err)
	}
	return l, nil
}
