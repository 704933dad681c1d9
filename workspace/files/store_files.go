package files

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/backup"
	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/retention"
	"github.com/workspaced/workspaced/schemas"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files/agentfile"
)

// The methods below are the parts of Store the file tree keeps in files
// of its own: a thread's file buffers, the agent cards, locks, backups
// and retention. workspace/files completes the Store with the journal.

// ReadTaskFile reads name, a path inside task taskID's directory, with
// the rules of agentfile.Read: a regular file reached without following a
// symlink, at most max bytes (over it, or a FIFO or device, is ErrUnsafe).
// An absolute path or one that leaves the task is ErrInvalid.
func (w *Store) ReadTaskFile(ctx context.Context, taskID, name string, max int64) ([]byte, error) {
	if err := w.requireTask(taskID); err != nil {
		return nil, err
	}
	clean, err := taskFileName(name)
	if err != nil {
		return nil, err
	}
	r, err := w.root.OpenRoot(workspace.TaskDir(taskID))
	if err != nil {
		return nil, fmt.Errorf("open task %s: %w", taskID, err)
	}
	defer r.Close()
	return agentfile.Read(r, clean, max)
}

// taskFileName checks that name stays inside a task directory and returns
// it cleaned.
func taskFileName(name string) (string, error) {
	if name == "" || strings.HasPrefix(name, "/") || strings.HasPrefix(name, `\`) {
		return "", workspace.Invalidf("read "+name, "name a file inside the task directory", "an absolute path")
	}
	clean := path.Clean(name)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", workspace.Invalidf("read "+name, "name a file inside the task directory", "names a file outside the task directory")
	}
	return clean, nil
}

// SaveAgents checks the agent cards against their schema and replaces
// config/agents.json under its lock.
func (w *Store) SaveAgents(ctx context.Context, cards workspace.AgentCards) error {
	if cards.Agents == nil {
		cards.Agents = []workspace.AgentCard{}
	}
	data, err := atomicfile.Marshal(cards)
	if err != nil {
		return err
	}
	if err := schemas.Validate(schemas.KindAgents, data); err != nil {
		return &workspace.Error{Kind: workspace.ErrInvalid, Op: "write " + workspace.AgentsFile, Err: err, Hint: "every card needs a name; see the agents schema"}
	}
	lk, err := w.LockFile(ctx, workspace.AgentsFile, "workspaced")
	if err != nil {
		return err
	}
	defer lk.Release()
	return w.Write(workspace.AgentsFile, data)
}

// LockTaskNamed is LockTask when name is "", LockNamed otherwise.
func (w *Store) LockTaskNamed(ctx context.Context, taskID, name, agent string) (workspace.Lock, error) {
	var l *locking.Lock
	var err error
	if name == "" {
		l, err = w.LockTask(ctx, taskID, agent)
	} else if err = w.requireTask(taskID); err == nil {
		l, err = w.LockNamed(ctx, taskID, name, agent)
	}
	if err != nil {
		return nil, err
	}
	return l, nil
}

// Locks walks the root for lock files (every *.lock in a .locks/
// directory, and the daemon's .workspaced.lock) and says of each whether
// it is held now and who held it last.
func (w *Store) Locks(ctx context.Context) ([]workspace.LockInfo, error) {
	dir := w.dir
	out := []workspace.LockInfo{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while walking (a pruned task)
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		inLocks := path.Base(path.Dir(rel)) == ".locks"
		if d.IsDir() {
			if p != dir && strings.HasPrefix(d.Name(), ".") && d.Name() != ".locks" {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasSuffix(d.Name(), ".lock") || !(inLocks || rel == ".workspaced.lock") {
			return nil
		}
		held, h, err := locking.Held(p)
		if err != nil {
			return err
		}
		li := workspace.LockInfo{Name: rel, Held: held, Holder: (*workspace.LockHolder)(h)}
		if parts := strings.Split(rel, "/"); len(parts) == 4 && parts[0] == "tasks" && parts[2] == ".locks" {
			li.TaskID, li.Lock = parts[1], strings.TrimSuffix(parts[3], ".lock")
		}
		out = append(out, li)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list locks: %w", err)
	}
	return out, nil
}

// BackupSet is the set of task id's kept state.json copies,
// tasks/<id>/backups/state_<stamp>.json.
func (w *Store) BackupSet(id string) *backup.Set {
	s := w.settings
	return &backup.Set{Root: w.root, Dir: path.Join(workspace.TaskDir(id), "backups"), Prefix: "state_",
		Keep: s.Backups.Keep, MaxBytes: int64(s.Limits.MaxFileBytes), DirPerm: w.DirPerm()}
}

// ListBackups lists task taskID's backups, newest first.
func (w *Store) ListBackups(ctx context.Context, taskID string) ([]workspace.BackupInfo, error) {
	if err := w.requireTask(taskID); err != nil {
		return nil, err
	}
	list, err := w.BackupSet(taskID).List()
	if err != nil {
		return nil, err
	}
	out := make([]workspace.BackupInfo, 0, len(list))
	for _, b := range list {
		out = append(out, workspace.BackupInfo{Name: b.Name, Time: b.Time, Size: b.Size})
	}
	return out, nil
}

// ReadBackup reads one backup of task taskID's state.json.
func (w *Store) ReadBackup(ctx context.Context, taskID, name string) ([]byte, error) {
	if err := w.requireTask(taskID); err != nil {
		return nil, err
	}
	data, err := w.BackupSet(taskID).Read(name)
	if errors.Is(err, backup.ErrBadName) || errors.Is(err, fs.ErrNotExist) {
		return nil, &workspace.Error{Kind: workspace.ErrNotFound, Op: "read backup " + name + " of task " + taskID, Err: err,
			Hint: "list them with 'workspaced backup list --task " + taskID + "'"}
	}
	return data, err
}

// RestoreBackup puts a backup back as state.json under the task's lock,
// keeping the state.json it replaces as a new backup.
func (w *Store) RestoreBackup(ctx context.Context, taskID, name string, valid func([]byte) error) (string, error) {
	op := "restore state of task " + taskID
	if err := w.requireTask(taskID); err != nil {
		return "", err
	}
	lk, err := w.LockTask(ctx, taskID, "workspaced-backup-restore")
	if err != nil {
		return "", err
	}
	defer lk.Release()
	set := w.BackupSet(taskID)
	if name == "" {
		b, _, _, err := set.NewestValid(valid)
		if err != nil {
			if errors.Is(err, backup.ErrNoValidBackup) {
				return "", &workspace.Error{Kind: workspace.ErrNotFound, Op: op, Err: err,
					Hint: "'workspaced state rebuild --task " + taskID + "' shows the state the journal gives"}
			}
			return "", err
		}
		name = b.Name
	}
	// Read the backup before Take: keeping the current state.json may
	// prune the oldest backup, which could be the chosen one.
	data, err := w.ReadBackup(ctx, taskID, name)
	if err != nil {
		return "", err
	}
	if err := valid(data); err != nil {
		return "", &workspace.Error{Kind: workspace.ErrInvalid, Op: op, Msg: "backup " + name + " is not a valid state", Err: err,
			Hint: "pick a valid one from 'workspaced backup list --task " + taskID + "'"}
	}
	target := path.Join(workspace.TaskDir(taskID), "state.json")
	if _, err := set.Take(target); err != nil {
		return "", err
	}
	if err := w.Write(target, data); err != nil {
		return "", fmt.Errorf("%s from %s: %w", op, name, err)
	}
	return name, nil
}

// Prune runs the retention policy over the tree (Pruner).
func (w *Store) Prune(ctx context.Context, req workspace.PruneRequest) (retention.Report, error) {
	p := &Pruner{Root: w.root, RootDir: w.dir, Policy: req.Policy, Now: w.Now, DryRun: req.DryRun,
		Agent: req.Agent, OnProgress: req.OnProgress, DiscardDecisions: req.DiscardDecisions}
	rep, err := p.Run(ctx)
	if err != nil {
		return rep, err
	}
	if rep.MemoryExpired, err = w.PruneMemory(ctx, w.Now(), req.DryRun); err != nil {
		return rep, err
	}
	rep.HistoryPruned, err = w.PruneHistory(ctx, req.Policy.KeptVersions(), req.DryRun)
	return rep, err
}
