package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

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
func backupRows(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, taskID string) ([]backupRow, error) {
	rows, err := q.Query(ctx, "SELECT n, saved_at, doc, name FROM backups WHERE task_id = $1 ORDER BY n", taskID)
	if err != nil {
		return nil, fmt.Errorf("list backups of task %s: %w", taskID, err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (backupRow, error) {
		var b backupRow
		var t time.Time
		err := r.Scan(&b.n, &t, &b.doc, &b.info.Name)
		b.info.Time, b.info.Size = t.UTC(), int64(len(b.doc))
		return b, err
	})
	if err != nil {
		return nil, err
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
	if err := s.requireTask(ctx, s.pool, taskID); err != nil {
		return nil, err
	}
	return backupRows(ctx, s.pool, taskID)
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

// RestoreBackup puts a backup back as the task's state in one transaction
// under the task's row lock (which the daemon's commit shares, so none
// interleaves), keeping the state it replaces as a new backup. name ""
// picks the newest backup valid accepts. The daemon's next commit folds
// the journal records after the restored state's journal_seq again.
func (s *Store) RestoreBackup(ctx context.Context, taskID, name string, valid func([]byte) error) (string, error) {
	op := "restore state of task " + taskID
	if err := s.requireTask(ctx, s.pool, taskID); err != nil {
		return "", err
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockTask(ctx, tx, taskID); err != nil {
			return err
		}
		var cur string
		var curSeq int64
		err := tx.QueryRow(ctx, "SELECT doc, journal_seq FROM states WHERE task_id = $1 FOR UPDATE", taskID).Scan(&cur, &curSeq)
		if errors.Is(err, pgx.ErrNoRows) {
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
		var epoch int64
		if err := tx.QueryRow(ctx, "SELECT epoch FROM lease WHERE id = 1").Scan(&epoch); err != nil {
			return err
		}
		b := &pgx.Batch{}
		b.Queue("INSERT INTO backups (task_id, journal_seq, doc) VALUES ($1, $2, $3)", taskID, curSeq, cur)
		b.Queue(`DELETE FROM backups WHERE task_id = $1 AND n <= (
			SELECT n FROM backups WHERE task_id = $1 ORDER BY n DESC OFFSET $2 LIMIT 1)`, taskID, s.settings.Backups.Keep)
		b.Queue("UPDATE states SET journal_seq = $2, doc = $3, epoch = $4, updated_at = now() WHERE task_id = $1",
			taskID, st.JournalSeq, chosen.doc, epoch)
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return "", err
	}
	return name, nil
}
