package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// The kept states of a task are rows of backups, numbered n in the order
// they were kept; a restore puts one back as the task's state.

// backupRows lists a task's backups newest first, with their names.
func (s *Store) backupRows(ctx context.Context, q Executor, taskID string) ([]Backup, error) {
	rows, err := q.Query(ctx, "SELECT n, saved_at, doc, name FROM backups WHERE task_id = $1 ORDER BY n", taskID)
	list, err := Collect(rows, err, func(r Rows) (Backup, error) {
		var b Backup
		var t time.Time
		err := r.Scan(&b.N, s.dl.ScanTime(&t), &b.Doc, &b.Info.Name)
		b.Info.Time, b.Info.Size = t.UTC(), int64(len(b.Doc))
		return b, err
	})
	if err != nil {
		return nil, fmt.Errorf("list backups of task %s: %w", taskID, err)
	}
	return NameBackups(list), nil
}

// taskBackups lists the backups of a task that must exist, newest first.
func (s *Store) taskBackups(ctx context.Context, taskID string) ([]Backup, error) {
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	if err := RequireTask(ctx, s.r, taskID); err != nil {
		return nil, err
	}
	return s.backupRows(ctx, s.r, taskID)
}

// ListBackups lists a task's backups, newest first.
func (s *Store) ListBackups(ctx context.Context, taskID string) ([]workspace.BackupInfo, error) {
	list, err := s.taskBackups(ctx, taskID)
	if err != nil {
		return nil, err
	}
	return BackupInfos(list), nil
}

// ReadBackup returns one backup's state document.
func (s *Store) ReadBackup(ctx context.Context, taskID, name string) ([]byte, error) {
	list, err := s.taskBackups(ctx, taskID)
	if err != nil {
		return nil, err
	}
	return BackupDoc(list, taskID, name)
}

// RestoreBackup puts a backup back as the task's state in one write
// holding the task (which the daemon's commit respects, so none
// interleaves), keeping the state it replaces as a new backup
// (Driver.RestoreState). name "" picks the newest backup valid accepts.
// The daemon's next commit folds the journal records after the restored
// state's journal_seq again.
func (s *Store) RestoreBackup(ctx context.Context, taskID, name string, valid func([]byte) error) (string, error) {
	op := RestoreOp(taskID)
	if err := RequireTask(ctx, s.r, taskID); err != nil {
		return "", err
	}
	err := s.d.WriteTask(ctx, taskID, func(tx Executor) error {
		var one int
		err := tx.QueryRow(ctx, "SELECT 1 FROM "+s.dl.StateRows+" WHERE task_id = $1"+s.dl.Lock("UPDATE"), taskID).Scan(&one)
		if errors.Is(err, ErrNoRows) {
			return NoStateToRestore(op)
		}
		if err != nil {
			return err
		}
		list, err := s.backupRows(ctx, tx, taskID)
		if err != nil {
			return err
		}
		chosen, st, err := ChooseBackup(list, taskID, name, valid)
		if err != nil {
			return err
		}
		name = chosen.Info.Name
		return s.d.RestoreState(ctx, tx, Restore{TaskID: taskID, NewSeq: st.JournalSeq, NewDoc: chosen.Doc, Keep: s.settings.Backups.Keep})
	})
	if err != nil {
		return "", err
	}
	return name, nil
}

// Restore is what Driver.RestoreState writes: the task's states row
// copied as the newest backup (the oldest beyond Keep dropped), and
// replaced by (NewSeq, NewDoc) under a new version.
type Restore struct {
	TaskID string
	NewSeq int64
	NewDoc string
	Keep   int
}
