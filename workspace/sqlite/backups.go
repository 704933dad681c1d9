package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/workspaced/workspaced/backup"
	"github.com/workspaced/workspaced/workspace"
)

// A task's kept states are rows of backups, named as the tree names its
// backup files: by the name column when the row came from a tree, else
// backup.Name of saved_at (state_<stamp>.json, a counter after the stamp
// when two share it).

type backupRow struct {
	n    int64
	info workspace.BackupInfo
	doc  string
}

// backupRows lists a task's backups newest first, with their names.
func backupRows(ctx context.Context, q querier, taskID string) ([]backupRow, error) {
	rows, err := q.QueryContext(ctx, "SELECT n, saved_at, doc, name FROM backups WHERE task_id = $1 ORDER BY n", taskID)
	list, err := collect(rows, err, func(r *sql.Rows) (backupRow, error) {
		var b backupRow
		var t string
		err := r.Scan(&b.n, &t, &b.doc, &b.info.Name)
		b.info.Time, b.info.Size = parseTS(t), int64(len(b.doc))
		return b, err
	})
	if err != nil {
		return nil, fmt.Errorf("list backups of task %s: %w", taskID, err)
	}
	seen := map[string]int{}
	for i := range list {
		if list[i].info.Name != "" {
			continue // imported from a tree under its file's name
		}
		stamp := backup.Name("state_", list[i].info.Time, 0)
		list[i].info.Name = backup.Name("state_", list[i].info.Time, seen[stamp])
		seen[stamp]++
	}
	for i, j := 0, len(list)-1; i < j; i, j = i+1, j-1 {
		list[i], list[j] = list[j], list[i]
	}
	return list, nil
}

// taskBackups lists the backups of a task that must exist, newest first.
func (s *Store) taskBackups(ctx context.Context, taskID string) ([]backupRow, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	if err := requireTask(ctx, s.rdb, taskID); err != nil {
		return nil, err
	}
	return backupRows(ctx, s.rdb, taskID)
}

// ListBackups lists a task's backups, newest first.
func (s *Store) ListBackups(ctx context.Context, taskID string) ([]workspace.BackupInfo, error) {
	list, err := s.taskBackups(ctx, taskID)
	if err != nil {
		return nil, err
	}
	out := make([]workspace.BackupInfo, len(list))
	for i, b := range list {
		out[i] = b.info
	}
	return out, nil
}

func noBackup(taskID, name string) error {
	return &workspace.Error{Kind: workspace.ErrNotFound, Op: "read backup " + name + " of task " + taskID, Msg: "no such backup",
		Hint: "list them with 'workspaced backup list --task " + taskID + "'"}
}

// ReadBackup returns one backup's state document.
func (s *Store) ReadBackup(ctx context.Context, taskID, name string) ([]byte, error) {
	list, err := s.taskBackups(ctx, taskID)
	if err != nil {
		return nil, err
	}
	for _, b := range list {
		if b.info.Name == name {
			return []byte(b.doc), nil
		}
	}
	return nil, noBackup(taskID, name)
}

// RestoreBackup puts a backup back as the task's state in one write transaction
// (the daemon's commit is one too, so none interleaves), keeping the state it replaces as a new backup. name ""
// picks the newest backup valid accepts. The daemon's next commit folds
// the journal records after the restored state's journal_seq again.
func (s *Store) RestoreBackup(ctx context.Context, taskID, name string, valid func([]byte) error) (string, error) {
	op := "restore state of task " + taskID
	if err := requireTask(ctx, s.rdb, taskID); err != nil {
		return "", err
	}
	err := s.write(ctx, func(tx wtx) error {
		if err := requireTask(ctx, tx, taskID); err != nil {
			return err
		}
		var cur string
		var curSeq int64
		err := tx.QueryRowContext(ctx, "SELECT doc, journal_seq FROM states WHERE task_id = $1", taskID).Scan(&cur, &curSeq)
		if errors.Is(err, sql.ErrNoRows) {
			return &workspace.Error{Kind: workspace.ErrNotFound, Op: op, Msg: "no state written yet, nothing to restore over"}
		}
		if err != nil {
			return err
		}
		list, err := backupRows(ctx, tx, taskID)
		if err != nil {
			return err
		}
		var chosen *backupRow
		for i := range list {
			if (name == "" && valid([]byte(list[i].doc)) == nil) || (name != "" && list[i].info.Name == name) {
				chosen = &list[i]
				break
			}
		}
		switch {
		case chosen == nil && name == "":
			return &workspace.Error{Kind: workspace.ErrNotFound, Op: op, Err: backup.ErrNoValidBackup,
				Hint: "'workspaced state rebuild --task " + taskID + "' shows the state the journal gives"}
		case chosen == nil:
			return noBackup(taskID, name)
		}
		if err := valid([]byte(chosen.doc)); err != nil {
			return &workspace.Error{Kind: workspace.ErrInvalid, Op: op, Msg: "backup " + chosen.info.Name + " is not a valid state", Err: err,
				Hint: "pick a valid one from 'workspaced backup list --task " + taskID + "'"}
		}
		st, err := decodeState(taskID, chosen.doc)
		if err != nil {
			return err
		}
		name = chosen.info.Name
		if err := keepBackup(ctx, tx, taskID, curSeq, cur, s.settings.Backups.Keep); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, "UPDATE states SET journal_seq = $2, doc = $3, updated_at = $4 WHERE task_id = $1",
			taskID, st.JournalSeq, chosen.doc, ts(now()))
		return err
	})
	if err != nil {
		return "", err
	}
	return name, nil
}

// keepBackup keeps a state document as the task's newest backup and
// drops the oldest beyond keep.
func keepBackup(ctx context.Context, tx wtx, taskID string, seq int64, doc string, keep int) error {
	if _, err := tx.ExecContext(ctx, "INSERT INTO backups (task_id, journal_seq, doc, saved_at) VALUES ($1, $2, $3, $4)",
		taskID, seq, doc, ts(now())); err != nil {
		return fmt.Errorf("keep a backup of task %s: %w", taskID, err)
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM backups WHERE task_id = $1 AND n <= (
		SELECT n FROM backups WHERE task_id = $1 ORDER BY n DESC LIMIT 1 OFFSET $2)`, taskID, keep)
	if err != nil {
		return fmt.Errorf("prune the backups of task %s: %w", taskID, err)
	}
	return nil
}
