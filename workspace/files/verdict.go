package files

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"time"

	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/machine"
)

// The verdict on a marker is read from the files alone, the way an agent
// in any language can read it: the journal record whose file is the
// marker's name says when it was taken (its seq) and whether the daemon
// rejected it on reading; once state.json's journal_seq reaches that seq,
// the state's errors say whether the machine refused it
// (machine.Refusal).

// Verdicts.
const (
	// VerdictWon: a claim was applied; the subtask is the agent's.
	VerdictWon = "won"
	// VerdictLost: a claim was refused (taken by another, blocked, the
	// task not executing or finished, ...).
	VerdictLost = "lost"
	// VerdictApplied: a done marker was applied.
	VerdictApplied = "applied"
	// VerdictRefused: a done marker was refused, or rejected on reading.
	VerdictRefused = "refused"
	// VerdictNotFound: the marker names a subtask the approved plan does
	// not have.
	VerdictNotFound = "not_found"
)

// Verdict is the daemon's decision on one marker, and what the state said
// when it was read.
type Verdict struct {
	Marker  string `json:"marker"` // the marker's file name
	TaskID  string `json:"task_id"`
	Kind    string `json:"kind"` // claim | done
	Verdict string `json:"verdict"`
	// Seq is the journal record the marker became.
	Seq       int64  `json:"seq"`
	Reason    string `json:"reason,omitempty"`
	SubtaskID string `json:"subtask_id,omitempty"`
	// SubtaskStatus and Worker are the subtask's in the state read, and
	// TaskStatus the task's (they may have moved on past the marker).
	SubtaskStatus string `json:"subtask_status,omitempty"`
	Worker        string `json:"worker,omitempty"`
	TaskStatus    string `json:"task_status"`
}

// Where a marker is on its way to a verdict.
const (
	// MarkerWaiting: still in the task directory, not taken.
	MarkerWaiting = "waiting"
	// MarkerTaken: journaled, but state.json does not reflect it yet.
	MarkerTaken = "taken"
	// MarkerDecided: state.json reflects its record; the verdict is known.
	MarkerDecided = "decided"
	// MarkerMissing: neither in the task directory nor in the journal
	// (deleted by hand, or read between a rename and the next listing).
	MarkerMissing = "missing"
)

// ReadVerdict reads where the marker name (a file name in the task
// directory) stands, and its verdict once decided. after is a journal seq
// the marker's record is known to follow (the state's journal_seq when it
// was dropped; 0 when unknown): only records past it are read. It only
// reads, and is safe to call while the daemon works.
func ReadVerdict(ws *workspace.Workspace, taskID, name string, after int64) (Verdict, string, error) {
	if _, ok := workspace.IsMarkerName(name); !ok || path.Base(name) != name {
		return Verdict{}, "", fmt.Errorf("%q is not the file name of a marker", name)
	}
	_, err := ws.Root().Lstat(markerPath(taskID, name))
	switch {
	case err == nil:
		return Verdict{}, MarkerWaiting, nil
	case !errors.Is(err, fs.ErrNotExist):
		return Verdict{}, "", fmt.Errorf("look for marker %s: %w", name, err)
	}
	rec, where, err := findRecord(ws, taskID, name, after)
	if err != nil || where != MarkerDecided {
		return Verdict{}, where, err
	}
	st, err := ws.ReadState(taskID)
	if errors.Is(err, workspace.ErrNotFound) {
		return Verdict{}, MarkerTaken, nil
	}
	if err != nil {
		return Verdict{}, "", err
	}
	if st.JournalSeq < rec.Seq {
		return Verdict{}, MarkerTaken, nil
	}
	return Judge(st, rec, name), MarkerDecided, nil
}

// Judge is the verdict on rec, the journal record of the marker name,
// from st, a state that reflects it (st.JournalSeq >= rec.Seq).
func Judge(st workspace.State, rec workspace.JournalRecord, name string) Verdict {
	v := Verdict{Marker: name, TaskID: st.TaskID, Kind: rec.Kind, Seq: rec.Seq, SubtaskID: rec.Marker.SubtaskID, TaskStatus: st.Status}
	if ss := st.Subtasks[v.SubtaskID]; ss != nil {
		v.SubtaskStatus, v.Worker = ss.Status, ss.Worker
	}
	reason, refused := machine.Refusal(st, rec)
	switch {
	case refused && v.SubtaskID != "" && st.PlanStatus == machine.PlanApproved && st.Subtasks[v.SubtaskID] == nil:
		v.Verdict = VerdictNotFound
	case refused && rec.Kind == workspace.KindClaim:
		v.Verdict = VerdictLost
	case refused:
		v.Verdict = VerdictRefused
	case rec.Kind == workspace.KindClaim:
		v.Verdict = VerdictWon
	default:
		v.Verdict = VerdictApplied
	}
	v.Reason = reason
	return v
}

// findRecord finds the journal record of the marker name among the records
// past after: MarkerDecided with the record once it is written,
// MarkerTaken while the marker is journaled but its record not yet
// written, MarkerMissing when the journal has neither.
func findRecord(ws *workspace.Workspace, taskID, name string, after int64) (workspace.JournalRecord, string, error) {
	l, err := listJournal(ws, taskID)
	if err != nil {
		return workspace.JournalRecord{}, "", err
	}
	for seq, e := range l.taken {
		if e.marker != name || seq <= after {
			continue
		}
		if _, recorded := l.records[seq]; !recorded {
			return workspace.JournalRecord{}, MarkerTaken, nil
		}
	}
	// Newest first: the record sought is most likely among the last.
	files := make([]journalEntry, 0, len(l.files))
	for _, e := range l.files {
		if e.last > after {
			files = append(files, e)
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].seq > files[j].seq })
	for _, e := range files {
		recs, err := readRecordFile(ws, taskID, e)
		if err != nil {
			return workspace.JournalRecord{}, "", fmt.Errorf("read journal of task %s: %w", taskID, err)
		}
		for _, r := range recs {
			if r.File == name && r.Seq > after {
				return r, MarkerDecided, nil
			}
		}
	}
	return workspace.JournalRecord{}, MarkerMissing, nil
}

// Serving reports whether a daemon serves the workspace, by probing its
// lock (which takes and creates nothing).
func Serving(ws *workspace.Workspace) (bool, error) {
	held, _, err := locking.Held(LockPath(ws.Dir()))
	return held, err
}

// Polling bounds of WaitVerdict: a daemon decides a marker within a few
// milliseconds, so the first looks come quickly; a marker still waiting
// after that is looked at less often.
const (
	verdictPollMin = 5 * time.Millisecond
	verdictPollMax = 50 * time.Millisecond
	// servingProbe is how often WaitVerdict checks that a daemon still
	// serves. Each probe holds the daemon's lock for an instant, which a
	// daemon starting at that very instant would take for another one
	// serving: probes are kept rare.
	servingProbe = 500 * time.Millisecond
	// missingFor is how long a marker may be found nowhere (a listing
	// of the journal can pass between the rename of a taken marker and
	// the write of its record) before it counts as gone.
	missingFor = time.Second
)

// WaitVerdict waits for the daemon's verdict on the marker name of a task
// (see ReadVerdict for after), until ctx is done. It fails with
// ErrNotServing when no daemon serves the root while the marker is
// undecided, and says where the marker was when ctx ended.
func WaitVerdict(ctx context.Context, ws *workspace.Workspace, taskID, name string, after int64) (Verdict, error) {
	return Wait(ctx, fileVerdicts{ws}, taskID, name, after)
}

// VerdictSource is where the verdict on a marker is read: the file tree
// (its marker files, journal and state.json) or a store that keeps
// markers and the journal otherwise.
type VerdictSource interface {
	// ReadVerdict says where the marker name stands (MarkerWaiting,
	// MarkerTaken, MarkerDecided, MarkerMissing) and, once decided, its
	// verdict; after is as for the package's ReadVerdict.
	ReadVerdict(taskID, name string, after int64) (Verdict, string, error)
	// Serving reports whether a daemon serves the workspace now.
	Serving() (bool, error)
	// Where names the workspace in messages.
	Where() string
}

// FileVerdicts is the file tree ws as a VerdictSource.
func FileVerdicts(ws *workspace.Workspace) VerdictSource { return fileVerdicts{ws} }

type fileVerdicts struct{ ws *workspace.Workspace }

func (f fileVerdicts) ReadVerdict(taskID, name string, after int64) (Verdict, string, error) {
	return ReadVerdict(f.ws, taskID, name, after)
}
func (f fileVerdicts) Serving() (bool, error) { return Serving(f.ws) }
func (f fileVerdicts) Where() string          { return f.ws.Dir() }

// Wait is WaitVerdict over any VerdictSource.
func Wait(ctx context.Context, src VerdictSource, taskID, name string, after int64) (Verdict, error) {
	poll := verdictPollMin
	var lastProbe, missingSince time.Time
	for {
		v, where, err := src.ReadVerdict(taskID, name, after)
		if err != nil {
			return Verdict{}, err
		}
		if where == MarkerDecided {
			return v, nil
		}
		now := time.Now()
		if where != MarkerMissing {
			missingSince = time.Time{}
		} else if missingSince.IsZero() {
			missingSince = now
		} else if now.Sub(missingSince) > missingFor {
			return Verdict{}, &workspace.Error{Kind: workspace.ErrNotFound, Op: "verdict on " + name,
				Msg:  "the marker is gone from the task directory and the journal has no record of it",
				Hint: "was it removed by hand? drop a new one"}
		}
		if now.Sub(lastProbe) >= servingProbe {
			lastProbe = now
			serving, err := src.Serving()
			if err != nil {
				return Verdict{}, err
			}
			if !serving {
				// The daemon may have decided just before it stopped.
				if v, where, err := src.ReadVerdict(taskID, name, after); err == nil && where == MarkerDecided {
					return v, nil
				}
				return Verdict{}, notServing(src.Where(), name, where)
			}
		}
		select {
		case <-ctx.Done():
			return Verdict{}, &workspace.Error{Kind: ErrNoVerdict, Op: "verdict on " + name, Err: ctx.Err(),
				Msg:  "no verdict yet: the marker is " + describeWhere(where),
				Hint: "the daemon decides it later; read the task's state to see, or wait longer"}
		case <-time.After(poll):
		}
		poll = min(2*poll, verdictPollMax)
	}
}

// notServing is the error of a marker left undecided with no daemon.
func notServing(root, name, where string) error {
	return &workspace.Error{Kind: ErrNotServing, Op: "verdict on " + name,
		Msg:  fmt.Sprintf("no daemon serves %s; the marker is %s", root, describeWhere(where)),
		Hint: "start the daemon (workspaced serve): it takes every marker waiting, and decides this one"}
}

func describeWhere(where string) string {
	switch where {
	case MarkerWaiting:
		return "waiting in the task directory, not yet taken"
	case MarkerTaken:
		return "journaled, not yet applied to state.json"
	}
	return "nowhere to be found yet"
}

// Errors of waiting for a verdict.
var (
	// ErrNotServing: no daemon serves the root, so a marker waiting for
	// its verdict stays undecided (see WaitVerdict).
	ErrNotServing = errors.New("no daemon serving")
	// ErrNoVerdict: the wait for a marker's verdict ended before the
	// daemon gave it.
	ErrNoVerdict = errors.New("no verdict yet")
)
