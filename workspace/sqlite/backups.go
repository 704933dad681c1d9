package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// sqlstore.Backups lists a task's backups newest first, with their names.
func backupRows(ctx context.Context, q querier, taskID string) ([]sqlstore.Backup, error) {
	rows, err := q.QueryContext(ctx, "SELECT n, saved_at, doc, name FROM backups WHERE task_id = $1 ORDER BY n", taskID)
	list, err := collect(rows, err, func(r *sql.Rows) (sqlstore.Backup, error) {
		var b sqlstore.Backup
		var t string
		err := r.Scan(&b.N, &t, &b.Doc, &b.Info.Name)
		b.Info.Time, b.Info.Size = parseTS(t), int64(len(b.Doc))
		return b, err
	})
	if err != nil {
		return nil, fmt.Errorf("list backups of task %s: %w", taskID, err)
	}
	return sqlstore.NameBackups(list), nil
}

// taskBackups lists the backups of a task that must exist, newest first.
func (s *Store) taskBackups(ctx context.Context, taskID string) ([]sqlstore.Backup, error) {
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
	return sqlstore.BackupInfos(list), nil
}

// ReadBackup returns one backup's state document.
func (s *Store) ReadBackup(ctx context.Context, taskID, name string) ([]byte, error) {
	list, err := s.taskBackups(ctx, taskID)
	if err != nil {
		return nil, err
	}
	return sqlstore.BackupDoc(list, taskID, name)
}

// RestoreBackup puts a backup back as the task's state in one write transaction
// (the daemon's commit is one too, so none interleaves), keeping the state it replaces as a new backup. name ""
// picks the newest backup valid accepts. The daemon's next commit folds
// the journal records after the restored state's journal_seq again.
func (s *Store) RestoreBackup(ctx context.Context, taskID, name string, valid func([]byte) error) (string, error) {
	op := sqlstore.RestoreOp(taskID)
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
			return sqlstore.NoStateToRestore(op)
		}
		if err != nil {
			return err
		}
		list, err := backupRows(ctx, tx, taskID)
		if err != nil {
			return err
		}
		chosen, st, err := sqlstore.ChooseBackup(list, taskID, name, valid)
		if err != nil {
			return err
		}
		name = chosen.Info.Name
		if err := keepBackup(ctx, tx, taskID, curSeq, cur, s.Settings().Backups.Keep); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, "UPDATE states SET journal_seq = $2, doc = $3, updated_at = $4 WHERE task_id = $1",
			taskID, st.JournalSeq, chosen.Doc, ts(now()))
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
