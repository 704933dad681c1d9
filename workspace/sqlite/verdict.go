package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	sqlite3lib "modernc.org/sqlite/lib"

	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

var _ workspace.VerdictSource = (*Store)(nil)

// VerdictState (sqlstore.Driver) reads of the state of taskID what the verdict on rec
// needs (machine.Judge, machine.JudgeReused): the task's id, status and
// plan status, the subtask rec names and the errors of rec's seq. The
// document is not decoded whole in Go — a verdict read costs what it
// reads, not the size of the state — nor checked against the schema again:
// only the daemon writes the row, and it checked the document first.
func (sqlDriver) VerdictState(ctx context.Context, tx sqlstore.Executor, taskID string, rec workspace.JournalRecord) (workspace.State, error) {
	var (
		st                  workspace.State
		sub, errs           sql.NullString
		plan, docID, status sql.NullString
	)
	err := tx.QueryRow(ctx, `SELECT json_extract(doc, '$.task_id'), json_extract(doc, '$.status'), json_extract(doc, '$.plan_status'),
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
