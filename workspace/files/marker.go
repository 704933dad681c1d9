package files

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"time"

	"github.com/workspaced/workspaced/schemas"
	"github.com/workspaced/workspaced/workspace"
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
	kind    string // workspace.KindClaim or KindDone
	marker  workspace.Marker
	plan    *workspace.Plan
	review  *workspace.Review
	reason  string // why it waits or is rejected
}

// examine reads the marker name of a task and decides what to do with it.
// td is the task directory, open; name is a file of dir (the task
// directory, or its journal for a marker already taken), and fi is its
// Lstat; the product the marker names is read from td. A marker younger than
// grace (by its mtime against now) that does not parse, does not match
// its schema, or names a product that is missing or invalid waits; one
// that is older, or that can never become valid (not a regular file,
// oversized, nested too deep, a product outside the task or unsafe to
// read), is rejected with the reason. grace < 0 never waits (a marker
// already taken into the journal is judged as it is).
func examine(ws *workspace.Workspace, td, dir *os.File, name, kind string, fi fs.FileInfo, now time.Time, grace time.Duration) examined {
	ex := examined{kind: kind}
	young := grace >= 0 && now.Sub(fi.ModTime()) < grace
	soft := func(reason string) examined {
		ex.reason = reason
		if young {
			ex.verdict = wait
		} else {
			ex.verdict = reject
		}
		return ex
	}
	hard := func(reason string) examined {
		ex.verdict, ex.reason = reject, reason
		return ex
	}
	if !fi.Mode().IsRegular() {
		return hard(fmt.Sprintf("marker is a %s, not a regular file", workspace.FileKind(fi.Mode())))
	}
	data, err := workspace.ReadAgentFileAt(dir, name, int64(ws.Settings().Limits.MaxFileBytes))
	if err != nil {
		if errors.Is(err, workspace.ErrNotFound) {
			ex.verdict = vanished
			return ex
		}
		return hard("marker " + workspace.Reason(err))
	}
	if err := workspace.CheckDepth(data, ws.Settings().Limits.MaxDepth); err != nil {
		return hard("marker " + workspace.Reason(err))
	}
	sk := schemas.KindClaim
	if kind == workspace.KindDone {
		sk = schemas.KindDone
	}
	if err := schemas.Validate(sk, data); err != nil {
		// Keep what can be read (the agent) for the record.
		_ = json.Unmarshal(data, &ex.marker)
		return soft(fmt.Sprintf("not a valid %s marker: %v", kind, err))
	}
	if err := json.Unmarshal(data, &ex.marker); err != nil {
		return soft(fmt.Sprintf("not a valid %s marker: %v", kind, err))
	}
	if kind == workspace.KindClaim {
		ex.verdict = take
		return ex
	}
	pkind, pid, err := workspace.ClassifyOutput(ex.marker.OutputFile)
	if err != nil {
		return hard(err.Error())
	}
	if pkind == workspace.ProductNone && ex.marker.Status != "cancelled" {
		return hard("done marker names no output_file")
	}
	if pkind == workspace.ProductOutput && ex.marker.SubtaskID != "" && ex.marker.SubtaskID != pid {
		// Finishing one subtask with another's output would leave the
		// second one's output looking finished.
		return hard(fmt.Sprintf("done marker names subtask %s, but its output_file %s is subtask %s's", ex.marker.SubtaskID, ex.marker.OutputFile, pid))
	}
	p, err := ws.ReadProductAt(td, ex.marker.OutputFile)
	if err != nil {
		reason := "output " + ex.marker.OutputFile + ": " + workspace.Reason(err)
		if errors.Is(err, workspace.ErrUnsafe) {
			return hard(reason)
		}
		return soft(reason)
	}
	ex.plan, ex.review = p.Plan, p.Review
	if pkind == workspace.ProductOutput && ex.marker.SubtaskID == "" {
		// The output's file name says which subtask it finishes.
		ex.marker.SubtaskID = pid
	}
	ex.verdict = take
	return ex
}

// record builds the journal record of an examined marker.
func (ex examined) record(seq int64, takenAt time.Time, file string) workspace.JournalRecord {
	rec := workspace.JournalRecord{Seq: seq, TakenAt: takenAt.UTC(), File: file, Kind: ex.kind, Marker: ex.marker}
	if ex.verdict == take {
		rec.Plan, rec.Review = ex.plan, ex.review
	} else {
		rec.Rejected = ex.reason
		if rec.Rejected == "" {
			rec.Rejected = "marker could not be read"
		}
	}
	return rec
}

// markerPath is a marker's path relative to the root.
func markerPath(taskID, name string) string { return path.Join(workspace.TaskDir(taskID), name) }
