package sqlstore

import (
	"github.com/workspaced/workspaced/backup"
	"github.com/workspaced/workspaced/workspace"
)

// A task's kept states are rows of backups, named as the tree names its
// backup files: by the name column when the row came from a tree, else
// backup.Name of saved_at (state_<stamp>.json, a counter after the stamp
// when two share it).

// Backup is one row of backups: its number, what a listing shows of it
// and its state document.
type Backup struct {
	N    int64
	Info workspace.BackupInfo
	Doc  string
}

// NameBackups names the rows of a task's backups, read oldest first (by
// number), that the tree did not name, and returns them newest first.
func NameBackups(list []Backup) []Backup {
	seen := map[string]int{}
	for i := range list {
		if list[i].Info.Name != "" {
			continue // imported from a tree under its file's name
		}
		stamp := backup.Name("state_", list[i].Info.Time, 0)
		list[i].Info.Name = backup.Name("state_", list[i].Info.Time, seen[stamp])
		seen[stamp]++
	}
	for i, j := 0, len(list)-1; i < j; i, j = i+1, j-1 {
		list[i], list[j] = list[j], list[i]
	}
	return list
}

// BackupInfos is what a listing shows of each backup.
func BackupInfos(list []Backup) []workspace.BackupInfo {
	out := make([]workspace.BackupInfo, len(list))
	for i, b := range list {
		out[i] = b.Info
	}
	return out
}

// BackupDoc is the state document of the backup name; a missing one is
// ErrNotFound.
func BackupDoc(list []Backup, taskID, name string) ([]byte, error) {
	for _, b := range list {
		if b.Info.Name == name {
			return []byte(b.Doc), nil
		}
	}
	return nil, noBackup(taskID, name)
}

func noBackup(taskID, name string) error {
	return &workspace.Error{Kind: workspace.ErrNotFound, Op: "read backup " + name + " of task " + taskID, Msg: "no such backup",
		Hint: "list them with 'workspaced backup list --task " + taskID + "'"}
}

// RestoreOp names a restore of a task's state in messages.
func RestoreOp(taskID string) string { return "restore state of task " + taskID }

// NoStateToRestore is the ErrNotFound of a restore (op) into a task that
// has no state yet.
func NoStateToRestore(op string) error {
	return &workspace.Error{Kind: workspace.ErrNotFound, Op: op, Msg: "no state written yet, nothing to restore over"}
}

// ChooseBackup picks the backup a restore puts back, from list (newest
// first): the one named name, or with name "" the newest valid accepts;
// it returns it with the state it holds.
func ChooseBackup(list []Backup, taskID, name string, valid func([]byte) error) (Backup, workspace.State, error) {
	op := RestoreOp(taskID)
	var chosen *Backup
	for i := range list {
		if (name == "" && valid([]byte(list[i].Doc)) == nil) || (name != "" && list[i].Info.Name == name) {
			chosen = &list[i]
			break
		}
	}
	switch {
	case chosen == nil && name == "":
		return Backup{}, workspace.State{}, &workspace.Error{Kind: workspace.ErrNotFound, Op: op, Err: backup.ErrNoValidBackup,
			Hint: "'workspaced state rebuild --task " + taskID + "' shows the state the journal gives"}
	case chosen == nil:
		return Backup{}, workspace.State{}, noBackup(taskID, name)
	}
	if err := valid([]byte(chosen.Doc)); err != nil {
		return Backup{}, workspace.State{}, &workspace.Error{Kind: workspace.ErrInvalid, Op: op, Msg: "backup " + chosen.Info.Name + " is not a valid state", Err: err,
			Hint: "pick a valid one from 'workspaced backup list --task " + taskID + "'"}
	}
	st, err := DecodeState(taskID, chosen.Doc)
	if err != nil {
		return Backup{}, workspace.State{}, err
	}
	return *chosen, st, nil
}
