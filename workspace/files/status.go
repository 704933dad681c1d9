package files

import (
	"context"
	"errors"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files/agentfile"
)

// Status is what `workspaced status` reports about a root.
type Status struct {
	Root    string `json:"root"`
	Serving bool   `json:"serving"`
	// PID and Since name the daemon serving (or, when Serving is false,
	// the last one that did, if its record is readable).
	PID   int        `json:"pid,omitempty"`
	Since *time.Time `json:"since,omitempty"`
	// ByStatus counts tasks by state status ("none" for no state.json yet,
	// "invalid" for one that does not validate).
	ByStatus       map[string]int `json:"by_status"`
	MarkersWaiting int            `json:"markers_waiting"`
	Tasks          []TaskStatus   `json:"tasks"`
	// Skipped lists the entries of tasks/ that are not task directories
	// (a symlink, a file, a name that is not a task id): no reader and no
	// daemon looks into them.
	Skipped []workspace.Skipped `json:"skipped,omitempty"`
}

// TaskStatus is one task's line in Status.
type TaskStatus struct {
	ID             string `json:"id"`
	Status         string `json:"status"`
	Phase          string `json:"phase,omitempty"`
	JournalSeq     int64  `json:"journal_seq"`
	MarkersWaiting int    `json:"markers_waiting"`
	Error          string `json:"error,omitempty"`
}

// ReadStatus reports whether a daemon serves the workspace (by probing its
// lock, which takes and creates nothing), and every task's status and
// waiting markers. It only reads.
//
// Each task costs one small row in Tasks, whatever its state holds: only
// the head of its state is read (workspace.ParseStateHead: it parses, and
// its task_id, status and journal_seq are there and sound), not checked
// against the schema; `workspaced validate` is the full check. At 20,000
// tasks the schema check of every state took seconds. Each task directory
// is opened once, through one handle of tasks/, and the tasks are read by
// as many goroutines as GOMAXPROCS.
func ReadStatus(ctx context.Context, ws *Store) (Status, error) {
	s := Status{Root: ws.Dir(), ByStatus: map[string]int{}, Tasks: []TaskStatus{}}
	held, h, err := locking.Held(LockPath(ws.Dir()))
	if err != nil {
		return s, err
	}
	s.Serving = held
	if h != nil {
		s.PID = h.PID
		since := h.Since
		s.Since = &since
	}
	ids, skipped, err := ws.TaskIDsReport()
	if err != nil {
		return s, err
	}
	s.Skipped = skipped
	s.Tasks = make([]TaskStatus, len(ids))
	if len(ids) == 0 {
		return s, nil
	}
	tasks, err := ws.Root().Open("tasks")
	if err != nil {
		return s, err
	}
	defer tasks.Close()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(ids)) {
		wg.Go(func() {
			in := interner{}
			for i := int(next.Add(1) - 1); i < len(ids); i = int(next.Add(1) - 1) {
				s.Tasks[i] = readTaskStatus(ws, tasks, ids[i], in)
			}
		})
	}
	wg.Wait()
	for _, t := range s.Tasks {
		s.MarkersWaiting += t.MarkersWaiting
		s.ByStatus[t.Status]++
	}
	return s, nil
}

// readTaskStatus is one task's row of ReadStatus, read through tasks, the
// open tasks/ directory.
func readTaskStatus(ws *Store, tasks *os.File, id string, in interner) TaskStatus {
	t := TaskStatus{ID: id}
	d, err := agentfile.OpenDirAt(tasks, id)
	var h workspace.StateHead
	if err == nil {
		defer d.Close()
		h, err = ws.ReadStateHeadIn(d, id)
	}
	switch {
	case err == nil:
		t.Status, t.Phase, t.JournalSeq = in.get(h.Status), in.get(h.Phase), h.JournalSeq
	case errors.Is(err, workspace.ErrNotFound):
		t.Status = "none"
	default:
		t.Status, t.Error = "invalid", err.Error()
	}
	if d != nil {
		names, _ := readMarkerNames(d)
		t.MarkersWaiting = len(names)
	}
	return t
}

// interner shares equal strings, so that rows holding the same status
// and phase hold one copy of each.
type interner map[string]string

func (in interner) get(s string) string {
	if v, ok := in[s]; ok {
		return v
	}
	if len(in) < 64 {
		in[s] = s
	}
	return s
}
