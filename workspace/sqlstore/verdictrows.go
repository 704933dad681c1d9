package sqlstore

import (
	"context"
	"errors"

	"github.com/workspaced/workspaced/workspace"
)

// ReadVerdict says where the marker name of a task stands: waiting (its
// row is in markers), decided (a journal row of that name past after:
// the daemon journals a marker and writes the state reflecting it in one
// transaction, so a taken marker is always decided), or missing. A
// journal row of that name at or before after is another marker's: the
// marker reused its name and is refused for it (machine.JudgeReused), as
// the store refuses it at once when it is dropped. It reads one snapshot;
// of the state, what the verdict needs: the excerpt its journal row holds
// while the state row is still the one the excerpt was taken from, else
// the document (verdictState).
func (s *Store) ReadVerdict(taskID, name string, after int64) (workspace.Verdict, string, error) {
	if err := CheckVerdictName(name); err != nil {
		return workspace.Verdict{}, "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), ReadTimeout)
	defer cancel()
	excerpts := s.hasExcerpts(ctx)
	var (
		rec   workspace.JournalRecord
		where string
		st    workspace.State
	)
	err := s.d.Read(ctx, func(tx Executor) error {
		where = workspace.MarkerMissing
		var waiting bool
		if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM markers WHERE task_id = $1 AND name = $2)", taskID, name).Scan(&waiting); err != nil {
			return err
		}
		if waiting {
			where = workspace.MarkerWaiting
			return nil
		}
		var (
			body string
			row  journalVerdict
			err  error
		)
		if excerpts {
			err = tx.QueryRow(ctx, `SELECT j.record, j.verdict, s.version, s.epoch, s.journal_seq
				FROM journal j LEFT JOIN states s ON s.task_id = j.task_id
				WHERE j.task_id = $1 AND j.name = $2 ORDER BY j.seq DESC LIMIT 1`, taskID, name).
				Scan(&body, &row.excerpt, &row.version, &row.epoch, &row.seq)
		} else {
			err = tx.QueryRow(ctx, "SELECT record FROM journal WHERE task_id = $1 AND name = $2 ORDER BY seq DESC LIMIT 1", taskID, name).Scan(&body)
		}
		if errors.Is(err, ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if rec, err = DecodeRecord(name, body); err != nil {
			return err
		}
		var ok bool
		if st, ok = row.state(taskID, rec); !ok {
			if st, err = verdictState(ctx, tx, taskID, rec); err != nil {
				return err
			}
		}
		where = workspace.MarkerDecided
		return nil
	})
	if err != nil {
		return workspace.Verdict{}, "", ReadErr("read the verdict on marker "+name, err)
	}
	v, where := Verdict(st, rec, taskID, name, where, after)
	return v, where, nil
}

// verdictState reads in tx what the verdict on rec needs of the task's
// state (machine.Judge, machine.JudgeReused): the document, scanned by
// workspace.ParseVerdictState for its head, the subtask rec names and the
// errors of rec's seq, the rest skipped. Reading the document is a copy;
// the scan is what costs, a fraction of a millisecond for a task of 10,000
// subtasks, where SQLite's json_extract, which parses the document for
// each path it is asked, took ten times as long.
func verdictState(ctx context.Context, tx Executor, taskID string, rec workspace.JournalRecord) (workspace.State, error) {
	var doc string
	if err := tx.QueryRow(ctx, "SELECT doc FROM states WHERE task_id = $1", taskID).Scan(&doc); err != nil {
		return workspace.State{}, err
	}
	return workspace.ParseVerdictState(taskID, []byte(doc), rec.Marker.SubtaskID, rec.Seq)
}
