package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sqlite3lib "modernc.org/sqlite/lib"

	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

var _ workspace.VerdictSource = (*Store)(nil)

// ReadVerdict says where the marker name of a task stands: waiting (its
// row is in markers), decided (a journal row of that name past after:
// the daemon journals a marker and writes the state reflecting it in one
// transaction, so a taken marker is always decided), or missing. A
// journal row of that name at or before after is another marker's: the
// marker reused its name and is refused for it (machine.JudgeReused), as
// the store refuses it at once when it is dropped. It reads one snapshot.
func (s *Store) ReadVerdict(taskID, name string, after int64) (workspace.Verdict, string, error) {
	if err := sqlstore.CheckVerdictName(name); err != nil {
		return workspace.Verdict{}, "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	var (
		rec   workspace.JournalRecord
		where string
		st    workspace.State
	)
	err := s.read(ctx, func(tx wtx) error {
		where = workspace.MarkerMissing
		var waiting bool
		if err := tx.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM markers WHERE task_id = $1 AND name = $2)", taskID, name).Scan(&waiting); err != nil {
			return err
		}
		if waiting {
			where = workspace.MarkerWaiting
			return nil
		}
		var body string
		err := tx.QueryRowContext(ctx, "SELECT record FROM journal WHERE task_id = $1 AND name = $2 ORDER BY seq DESC LIMIT 1", taskID, name).Scan(&body)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if rec, err = sqlstore.DecodeRecord(name, body); err != nil {
			return err
		}
		if st, err = verdictState(ctx, tx, taskID, rec); err != nil {
			return err
		}
		where = workspace.MarkerDecided
		return nil
	})
	if err != nil {
		return workspace.Verdict{}, "", sqlstore.ReadErr("read the verdict on marker "+name, err)
	}
	v, where := sqlstore.Verdict(st, rec, taskID, name, where, after)
	return v, where, nil
}

// verdictState reads of the state of taskID what the verdict on rec
// needs (machine.Judge, machine.JudgeReused): the task's id, status and
// plan status, the subtask rec names and the errors of rec's seq. The
// document is not decoded whole in Go — a verdict read costs what it
// reads, not the size of the state — nor checked against the schema again:
// only the daemon writes the row, and it checked the document first.
func verdictState(ctx context.Context, tx wtx, taskID string, rec workspace.JournalRecord) (workspace.State, error) {
	var (
		st                  workspace.State
		sub, errs           sql.NullString
		plan, docID, status sql.NullString
	)
	err := tx.QueryRowContext(ctx, `SELECT json_extract(doc, '$.task_id'), json_extract(doc, '$.status'), json_extract(doc, '$.plan_status'),
		(SELECT value FROM json_each(doc, '$.subtasks') WHERE key = $2),
		(SELECT json_group_array(json(value)) FROM json_each(doc, '$.errors') WHERE json_extract(value, '$.seq') = $3)
		FROM states WHERE task_id = $1`, taskID, rec.Marker.SubtaskID, rec.Seq).Scan(&docID, &status, &plan, &sub, &errs)
	if err != nil {
		if isMalformedJSON(err) {
			return st, &workspace.Error{Kind: workspace.ErrInvalid, Op: "read state of task " + taskID, Err: err,
				Hint: "restore the newest valid backup of the state"}
		}
		return st, err
	}
	st.TaskID, st.Status, st.PlanStatus = docID.String, status.String, plan.String
	if sub.Valid {
		var ss workspace.SubtaskState
		if err := json.Unmarshal([]byte(sub.String), &ss); err != nil {
			return st, fmt.Errorf("state of task %s, subtask %s: %w", taskID, rec.Marker.SubtaskID, err)
		}
		st.Subtasks = map[string]*workspace.SubtaskState{rec.Marker.SubtaskID: &ss}
	}
	if errs.Valid {
		if err := json.Unmarshal([]byte(errs.String), &st.Errors); err != nil {
			return st, fmt.Errorf("state of task %s, its errors: %w", taskID, err)
		}
	}
	return st, nil
}

// Serving reports whether a daemon holds the daemon's lock now.
func (s *Store) Serving() (bool, error) {
	held, _, err := locking.Held(s.leadFile())
	return held, err
}

// Where names the workspace in messages: its database file.
func (s *Store) Where() string { return "the SQLite database " + s.path }

// isMalformedJSON reports SQLite's refusal of a document that is not
// JSON (it has no code of its own).
func isMalformedJSON(err error) bool {
	return sqliteCode(err) == sqlite3lib.SQLITE_ERROR && strings.Contains(err.Error(), "malformed JSON")
}
