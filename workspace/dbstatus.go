package workspace

import (
	"time"
)

// StoreStatus is what 'workspaced status' reports of a workspace kept in
// a database (PostgreSQL, SQLite): which daemon serves, the tasks by
// status and the markers waiting, and the serving daemon's own report
// when the store can ask it. Its JSON fields are named as the file tree's
// status names them where they mean the same.
type StoreStatus struct {
	Root    string `json:"root"`
	Serving bool   `json:"serving"`
	// Holder, Epoch and ExpiresAt are PostgreSQL's lease row: the daemon
	// serving (or, when Serving is false, the last one that did, if
	// any). On SQLite Holder names the daemon holding the lock and Epoch
	// is 0.
	Holder    string     `json:"holder,omitempty"`
	Epoch     int64      `json:"epoch"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// PID and Since name the process holding SQLite's daemon lock.
	PID   int        `json:"pid,omitempty"`
	Since *time.Time `json:"since,omitempty"`
	// ByStatus counts tasks by state status ("none" for no state yet,
	// "invalid" for one that does not parse).
	ByStatus       map[string]int    `json:"by_status"`
	MarkersWaiting int               `json:"markers_waiting"`
	Tasks          []StoreTaskStatus `json:"tasks"`
	// Live is the serving daemon's report of itself (the tasks it is
	// retrying and why), when the store can ask it; nil otherwise.
	Live *Live `json:"live,omitempty"`
	// Fault is a fault of the machine that keeps the store from taking
	// any write now (on SQLite a read-only filesystem), nil when there is
	// none: reads go on, every write fails until it is mended.
	Fault *StoreFault `json:"fault,omitempty"`
}

// StoreFault is a fault of the machine a store is on: its kind (one of
// the Fault… constants), the error it causes and the hint to mend it.
type StoreFault struct {
	Kind  string `json:"kind"`
	Error string `json:"error"`
	Hint  string `json:"hint,omitempty"`
}

// StoreTaskStatus is one task's line in StoreStatus.
type StoreTaskStatus struct {
	ID             string `json:"id"`
	Status         string `json:"status"`
	Phase          string `json:"phase,omitempty"`
	JournalSeq     int64  `json:"journal_seq"`
	MarkersWaiting int    `json:"markers_waiting"`
	Error          string `json:"error,omitempty"`
}
