package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// sqlstore.Backups lists a task's backups newest first, with their names.
func backupRows(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, taskID string) ([]sqlstore.Backup, error) {
	rows, err := q.Query(ctx, "SELECT n, saved_at, doc, name FROM backups WHERE task_id = $1 ORDER BY n", taskID)
	if err != nil {
		return nil, fmt.Errorf("list backups of task %s: %w", taskID, err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (sqlstore.Backup, error) {
		var b sqlstore.Backup
		var t time.Time
		err := r.Scan(&b.N, &t, &b.Doc, &b.Info.Name)
		b.Info.Time, b.Info.Size = t.UTC(), int64(len(b.Doc))
		return b, err
	})
	if err != nil {
		return nil, err
	}
	return sqlstore.NameBackups(list), nil
}

// taskBackups lists the backups of a task that must exist, newest first.
func (s *Store) taskBackups(ctx context.Context, taskID string) ([]sqlstore.Backup, error) {
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

// RestoreBackup puts a backup back as the task's state in one transaction
// under the task's row lock (which the daemon's commit shares, so none
// interleaves), keeping the state it replaces as a new backup. name ""
// picks the newest backup valid accepts. The daemon's next commit folds
// the journal records after the restored state's journal_seq again.
func (s *Store) RestoreBackup(ctx context.Context, taskID, name string, valid func([]byte) error) (string, error) {
	op := sqlstore.RestoreOp(taskID)
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
		var epoch int64
		if err := tx.QueryRow(ctx, "SELECT epoch FROM lease WHERE id = 1").Scan(&epoch); err != nil {
			return err
		}
		b := &pgx.Batch{}
		b.Queue("INSERT INTO backups (task_id, journal_seq, doc) VALUES ($1, $2, $3)", taskID, curSeq, cur)
		b.Queue(`DELETE FROM backups WHERE task_id = $1 AND n <= (
			SELECT n FROM backups WHERE task_id = $1 ORDER BY n DESC OFFSET $2 LIMIT 1)`, taskID, s.Settings().Backups.Keep)
		b.Queue("UPDATE states SET journal_seq = $2, doc = $3, epoch = $4, updated_at = now() WHERE task_id = $1",
			taskID, st.JournalSeq, chosen.Doc, epoch)
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return "", err
	}
	return name, nil
}
