package sqlite

import (
	"context"
	"fmt"
	"strconv"

	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// A task's states are rows of state_history (migration 0008): the newest
// row written as a state is the current one (the states view), the rows
// before it the backups (the backups view). A commit or a restore inserts
// the new state as a row, so the one it replaces becomes a backup where
// it lies: the document is written once, never copied.

// RestoreState writes a restore (sqlstore.Store.RestoreBackup) in its
// write transaction: the chosen document inserted as the task's state
// under a new version, which no committer holds (the current one plus
// one), the state it replaces kept as the newest backup and the oldest
// beyond r.Keep dropped.
func (d sqlDriver) RestoreState(ctx context.Context, ex sqlstore.Executor, r sqlstore.Restore) error {
	tx := ex.(wtx)
	if _, err := tx.ExecContext(ctx, `INSERT INTO state_history (task_id, journal_seq, version, updated_at, doc)
		SELECT task_id, $2, version + 1, $4, $3 FROM states WHERE task_id = $1`,
		r.TaskID, r.NewSeq, r.NewDoc, ts(now())); err != nil {
		return fmt.Errorf("write the restored state of task %s: %w", r.TaskID, err)
	}
	return pruneStates(ctx, tx, r.TaskID, r.Keep)
}

// assembledDoc is the document of the state_history row s: its doc, or
// when written as parts (doc ”) their bodies joined in the order its
// parts list them, as the states and backups views give it (migration
// 0010_state_parts).
const assembledDoc = `CASE WHEN s.parts IS NULL OR s.doc != '' THEN s.doc ELSE (SELECT group_concat(body, '') FROM
	(SELECT p.body AS body FROM json_each(s.parts) j JOIN state_parts p ON p.id = j.value ORDER BY j.key)) END`

// insertState inserts a new state of the task: it is the current one from
// here on. A state given as parts (w.Parts) inserts the parts not stored
// yet, setting their ids, and the row listing them; the parts the row
// before held and this one does not are marked replaced by it.
func insertState(ctx context.Context, tx wtx, w sqlstore.CommitWrite) error {
	if w.Parts == nil {
		res, err := tx.ExecContext(ctx, "INSERT INTO state_history (task_id, journal_seq, version, updated_at, doc) VALUES ($1, $2, $3, $4, $5)",
			w.TaskID, w.Seq, w.Version, ts(w.Now), w.Doc)
		if err != nil {
			return fmt.Errorf("write the state of task %s: %w", w.TaskID, err)
		}
		if w.Follows && len(w.Replaced) == 0 {
			return nil // the row before was the committer's, whole
		}
		n, err := res.LastInsertId()
		if err == nil {
			err = markReplaced(ctx, tx, w, n, "[]")
		}
		return err
	}
	list := make([]byte, 0, 8*len(w.Parts)+2)
	list = append(list, '[')
	for i := range w.Parts {
		p := &w.Parts[i]
		if p.ID == 0 {
			res, err := tx.ExecContext(ctx, "INSERT INTO state_parts (task_id, body) VALUES ($1, $2)", w.TaskID, p.Body)
			if err == nil {
				p.ID, err = res.LastInsertId()
			}
			if err != nil {
				return fmt.Errorf("write a part of the state of task %s: %w", w.TaskID, err)
			}
		}
		if i > 0 {
			list = append(list, ',')
		}
		list = strconv.AppendInt(list, p.ID, 10)
	}
	list = append(list, ']')
	res, err := tx.ExecContext(ctx, "INSERT INTO state_history (task_id, journal_seq, version, updated_at, doc, parts) VALUES ($1, $2, $3, $4, '', $5)",
		w.TaskID, w.Seq, w.Version, ts(w.Now), string(list))
	var n int64
	if err == nil {
		n, err = res.LastInsertId()
	}
	if err != nil {
		return fmt.Errorf("write the state of task %s: %w", w.TaskID, err)
	}
	return markReplaced(ctx, tx, w, n, string(list))
}

// markReplaced marks the parts the new row n (holding the parts of
// list, a JSON array) replaced: w.Replaced when the row before was the
// committer's, else every part of the task still held but its own.
func markReplaced(ctx context.Context, tx wtx, w sqlstore.CommitWrite, n int64, list string) error {
	var err error
	switch {
	case !w.Follows:
		_, err = tx.ExecContext(ctx, `UPDATE state_parts SET replaced_at = $1
			WHERE task_id = $2 AND replaced_at IS NULL AND id NOT IN (SELECT value FROM json_each($3))`, n, w.TaskID, list)
	case len(w.Replaced) > 0:
		_, err = tx.ExecContext(ctx, "UPDATE state_parts SET replaced_at = $1 WHERE id IN (SELECT value FROM json_each($2))", n, idList(w.Replaced))
	}
	if err != nil {
		return fmt.Errorf("mark the replaced parts of the state of task %s: %w", w.TaskID, err)
	}
	return nil
}

// idList is ids as a JSON array.
func idList(ids []int64) string {
	b := []byte{'['}
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return string(append(b, ']'))
}

// pruneStates drops the task's rows beyond the newest keep+1: the state
// and keep backups; then the parts that no row kept holds, those replaced
// at or before the oldest one kept.
func pruneStates(ctx context.Context, tx wtx, taskID string, keep int) error {
	res, err := tx.ExecContext(ctx, `DELETE FROM state_history WHERE task_id = $1 AND n <= (
		SELECT n FROM state_history WHERE task_id = $1 ORDER BY n DESC LIMIT 1 OFFSET $2)`, taskID, keep+1)
	var dropped int64
	if err == nil {
		dropped, err = res.RowsAffected()
	}
	if err == nil && dropped > 0 {
		_, err = tx.ExecContext(ctx, `DELETE FROM state_parts WHERE task_id = $1
			AND replaced_at <= (SELECT min(n) FROM state_history WHERE task_id = $1)`, taskID)
	}
	if err != nil {
		return fmt.Errorf("prune the backups of task %s: %w", taskID, err)
	}
	return nil
}
