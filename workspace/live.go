package workspace

import (
	"time"
)

// Live is what a running daemon reports about itself: what status cannot
// read from the store.
type Live struct {
	PID int `json:"pid"`
	// Epoch is the leadership's epoch (0 on a store that needs none).
	Epoch int64 `json:"epoch,omitempty"`
	// Ready says the start-up scan is done.
	Ready bool `json:"ready"`
	// LastRescan is when the last full scan ended.
	LastRescan time.Time `json:"last_rescan"`
	// Tasks is how many tasks the daemon knows; Unwatched how many active
	// ones its wake-up source could not watch (served by the rescans),
	// and why.
	Tasks           int    `json:"tasks"`
	Unwatched       int    `json:"unwatched"`
	UnwatchedReason string `json:"unwatched_reason,omitempty"`
	// Wakeups names the wake-up source ("inotify", "poll", "listen") and
	// Watches how many watches it holds.
	Wakeups string `json:"wakeups,omitempty"`
	Watches int    `json:"watches"`
	// Descriptors is how many file descriptors the daemon holds open, and
	// DescriptorLimit its soft limit (0 when unknown).
	Descriptors     int    `json:"descriptors,omitempty"`
	DescriptorLimit uint64 `json:"descriptor_limit,omitempty"`
	// Stopped lists the tasks whose commit failed (a full disk, a
	// read-only filesystem), retried with backoff until it succeeds.
	Stopped []StoppedTask `json:"stopped"`
	// Refused lists the tasks the store will not serve (on files, entries
	// of tasks/ that are symlinks): never followed, never served.
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
	// Fault names the kind of the error (a FaultKind constant).
	Fault string `json:"fault,omitempty"`
}

// Degraded reports whether the daemon is short of serving everything at
// once: a task stopped or unwatched.
func (l Live) Degraded() bool { return len(l.Stopped) > 0 || l.Unwatched > 0 }
