package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// A running daemon answers on a Unix socket named after the root
// directory's device and inode, with what status cannot read from the
// tree: the tasks stopped by an error and why, the tasks it cannot watch,
// the entries of tasks/ it refuses, and when it last rescanned. On Linux
// the socket is in the abstract namespace and has no file; elsewhere it is
// a file in a directory of the user's own under /tmp (live_other.go).
// Either way it writes nothing and holds nothing open on the workspace's
// filesystem; it only answers, with one JSON document per connection, and
// takes no input.

// Live is what a running daemon reports about itself.
type Live struct {
	PID int `json:"pid"`
	// LastRescan is when the last full scan of tasks/ ended.
	LastRescan time.Time `json:"last_rescan"`
	// Tasks is how many tasks the daemon knows; Unwatched how many active
	// ones it could not watch (served by the rescans), and why.
	Tasks           int    `json:"tasks"`
	Unwatched       int    `json:"unwatched"`
	UnwatchedReason string `json:"unwatched_reason,omitempty"`
	// Stopped lists the tasks whose processing failed (a full disk, a
	// read-only filesystem), retried with backoff until it succeeds.
	Stopped []StoppedTask `json:"stopped"`
	// Refused lists the entries of tasks/ that are not directories
	// (symlinks): never followed, never served.
	Refused []string `json:"refused,omitempty"`
}

// StoppedTask is a task the daemon is retrying.
type StoppedTask struct {
	Task    string    `json:"task"`
	Error   string    `json:"error"`
	Since   time.Time `json:"since"`
	Retries int       `json:"retries"`
	// Hint says how to mend the machine when it is at fault (a full
	// disk, a read-only filesystem, permissions, the open-files limit).
	Hint string `json:"hint,omitempty"`
}

// Degraded reports whether the daemon is short of serving everything at
// once: a task stopped or unwatched.
func (l Live) Degraded() bool { return len(l.Stopped) > 0 || l.Unwatched > 0 }

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

// serveLive answers every connection with the latest report until ln is
// closed.
func serveLive(ln net.Listener, report func() Live) {
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

// ReadLive asks the daemon serving root for its report. It fails with
// ErrNoLive when none answers.
func ReadLive(root string) (Live, error) {
	addr, err := liveAddr(root)
	if err != nil {
		return Live{}, err
	}
	c, err := net.DialTimeout("unix", addr, time.Second)
	if err != nil {
		return Live{}, fmt.Errorf("%w: %v", ErrNoLive, err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	var l Live
	if err := json.NewDecoder(c).Decode(&l); err != nil {
		return Live{}, fmt.Errorf("read the daemon's report: %w", err)
	}
	return l, nil
}

// report is the loop's Live: it walks the tasks, so the loop makes it
// only when something in it changed (see publish).
func (l *loop) report() Live {
	r := Live{LastRescan: l.lastScan, Tasks: len(l.d.tasks), Unwatched: l.unwatched, Stopped: []StoppedTask{}}
	if l.unwatched > 0 && l.watchErr != nil {
		r.UnwatchedReason = l.watchErr.Error()
	}
	for id, t := range l.d.tasks {
		if t.stopped != nil {
			r.Stopped = append(r.Stopped, StoppedTask{Task: id, Error: t.stopped.Error(), Since: t.since, Retries: t.failures,
				Hint: workspace.FaultHint(t.stopped)})
		}
		if t.refused {
			r.Refused = append(r.Refused, id)
		}
	}
	slices.SortFunc(r.Stopped, func(a, b StoppedTask) int { return strings.Compare(a.Task, b.Task) })
	slices.Sort(r.Refused)
	return r
}
