package files

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"time"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files/agentfile"
	"github.com/workspaced/workspaced/workspace/machine"
)

// verdict is what the daemon does with a marker it has looked at.
type verdict int

const (
	// take: the marker and its product are valid; journal it.
	take verdict = iota
	// wait: not valid yet but young enough that it may still be being
	// written; look again after the grace period.
	wait
	// reject: journal it with the reason; the state only records the error.
	reject
	// vanished: the marker is gone (another process removed it).
	vanished
)

// examined is the outcome of reading one marker.
type examined struct {
	verdict verdict
	judged  machine.Judgement
}

// examine reads the marker name of a task and decides what to do with it,
// by the machine's rules (machine.ParseMarker). td is the task directory,
// open; name is a file of dir (the task directory, or its journal for a
// marker already taken), file the marker's name as dropped (its record's
// file), and fi its Lstat; the product the marker
// names is read from td. A marker younger than grace (by its mtime
// against now) refused softly — it does not parse, does not match its
// schema, or names a product that is missing or invalid — waits; one that
// is older, or refused hard (not a regular file, oversized, nested too
// deep, a product outside the task or unsafe to read), is rejected with
// the reason. grace < 0 never waits (a marker already taken into the
// journal is judged as it is).
func examine(ws *Store, td, dir *os.File, name, file, kind string, fi fs.FileInfo, now time.Time, grace time.Duration) examined {
	lim := ws.Settings().Limits
	if !fi.Mode().IsRegular() {
		return examined{verdict: reject, judged: machine.Rejected(kind, file, fmt.Sprintf("marker is a %s, not a regular file", workspace.FileKind(fi.Mode())))}
	}
	data, err := agentfile.ReadAt(dir, name, int64(lim.MaxFileBytes))
	if err != nil {
		if errors.Is(err, workspace.ErrNotFound) {
			return examined{verdict: vanished, judged: machine.Rejected(kind, file, "")}
		}
		return examined{verdict: reject, judged: machine.Rejected(kind, file, "marker "+workspace.Reason(err))}
	}
	m := machine.ParseMarker(kind, file, data, ws.Settings())
	var p machine.ProductRead
	if f := m.Product(); f != "" {
		p.Data, p.Err = ws.ReadProductFileAt(td, f)
	}
	ex := examined{verdict: take, judged: m.Judge(p)}
	switch {
	case ex.judged.Taken():
	case ex.judged.Soft() && grace >= 0 && now.Sub(fi.ModTime()) < grace:
		ex.verdict = wait
	default:
		ex.verdict = reject
	}
	return ex
}

// record builds the journal record of an examined marker, taken as seq
// at takenAt: one that matches the journal schema (machine's
// Judgement.Record).
func (ex examined) record(seq int64, takenAt time.Time) workspace.JournalRecord {
	j := ex.judged
	if ex.verdict != take && j.Taken() {
		j = j.Reject("")
	}
	return j.Record(seq, takenAt)
}

// markerPath is a marker's path relative to the root.
func markerPath(taskID, name string) string { return path.Join(workspace.TaskDir(taskID), name) }
