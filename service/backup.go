package service

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"

	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/vocab"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"
)

// Backup is one kept state of a task, checked as the daemon checks a
// state before it trusts it.
type Backup struct {
	Name       string `json:"name"`
	Time       string `json:"time"`
	Size       int64  `json:"size"`
	Valid      bool   `json:"valid"`
	JournalSeq int64  `json:"journal_seq"`
	Status     string `json:"status,omitempty"`
	Problem    string `json:"problem,omitempty"`
}

// Backups lists the kept states of task id, newest first, each read and
// validated (Valid, or Problem says why not).
func Backups(ctx context.Context, st workspace.Store, id string) ([]Backup, error) {
	if _, err := st.GetTask(ctx, id); err != nil {
		return nil, err
	}
	list, err := st.ListBackups(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make([]Backup, 0, len(list))
	for _, b := range list {
		bi := Backup{Name: b.Name, Time: b.Time.UTC().Format(workspace.TimeFormat), Size: b.Size}
		data, err := st.ReadBackup(ctx, id, b.Name)
		if err == nil {
			var s workspace.State
			s, err = ValidateState(id, data)
			bi.JournalSeq, bi.Status = s.JournalSeq, s.Status
		}
		if err != nil {
			bi.Problem = err.Error()
		} else {
			bi.Valid = true
		}
		out = append(out, bi)
	}
	return out, nil
}

// RestoreBackup replaces task id's state, atomically and under the task's
// lock, with the backup name, or with the newest valid one when name is
// "". The state replaced is kept as a backup first; the journal past the
// restored state is replayed at the daemon's next load of the task. It
// refuses while a daemon serves the workspace (its flock held) unless
// force. It returns the backup restored.
func RestoreBackup(ctx context.Context, st workspace.Store, id, name string, force bool) (string, error) {
	if _, err := st.GetTask(ctx, id); err != nil {
		return "", err
	}
	if lock := DaemonLock(st); lock != "" && !force {
		held, h, err := locking.Held(lock)
		if err != nil {
			return "", err
		}
		if held {
			who := "a daemon"
			if h != nil {
				who = fmt.Sprintf("a daemon (pid %d)", h.PID)
			}
			return "", &workspace.Error{Kind: workspace.ErrConflict, Op: "restore state of task " + id,
				Msg: who + " is serving this root", Hint: "stop it first, or pass --force (it replays the journal past the backup at the task's next marker)"}
		}
	}
	return st.RestoreBackup(ctx, id, name, func(data []byte) error { _, err := ValidateState(id, data); return err })
}

// WhyNoBackups says why task id has no backups of its state.
func WhyNoBackups(ctx context.Context, s workspace.Store, id string) string {
	w, err := Tree("", s)
	if err != nil {
		if _, err := s.ReadState(ctx, id); errors.Is(err, workspace.ErrNotFound) {
			return "the daemon has not written its state yet (is one serving? see 'workspaced status')"
		}
		return "no state of it has been replaced yet, or retention has summarised the finished task"
	}
	if info, err := files.ReadTaskInfo(w.Root(), id); err == nil && info.Summarized && vocab.Finished(info.Status) {
		return "the task is " + info.Status + " and summarised: retention kept only task.json, state.json and events.log"
	}
	_, err = w.ReadState(ctx, id)
	if errors.Is(err, workspace.ErrNotFound) {
		return "the daemon has not written its state.json yet (is one serving? see 'workspaced status')"
	}
	dir := path.Join(workspace.TaskDir(id), "backups")
	// backups/ is made with the first backup, which keeps the first
	// state.json a write replaces.
	if _, derr := w.Root().Lstat(dir); errors.Is(derr, fs.ErrNotExist) {
		return "state.json has not been replaced since the daemon first wrote it (a backup keeps each state.json a later write replaces)"
	}
	if err != nil {
		return "state.json cannot be read (" + err.Error() + ") and " + dir + "/ holds none"
	}
	return dir + "/ is empty, though the daemon keeps one before every state write: were they removed by hand?"
}
