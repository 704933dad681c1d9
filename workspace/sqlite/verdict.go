package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/internal/dbstore"
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
	if err := dbstore.CheckVerdictName(name); err != nil {
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
		if rec, err = dbstore.DecodeRecord(name, body); err != nil {
			return err
		}
		var doc string
		if err := tx.QueryRowContext(ctx, "SELECT doc FROM states WHERE task_id = $1", taskID).Scan(&doc); err != nil {
			return err
		}
		// Parsed, not checked against the schema again: only the daemon
		// writes the row, and it checked the document first (a whole
		// check costs milliseconds a read, with the waiting agent).
		if err := json.Unmarshal([]byte(doc), &st); err != nil {
			return &workspace.Error{Kind: workspace.ErrInvalid, Op: "read state of task " + taskID, Err: err,
				Hint: "restore the newest valid backup of the state"}
		}
		where = workspace.MarkerDecided
		return nil
	})
	if err != nil {
		return workspace.Verdict{}, "", readErr("read the verdict on marker "+name, err)
	}
	v, where := dbstore.Verdict(st, rec, taskID, name, where, after)
	return v, where, nil
}

// Serving reports whether a daemon holds the daemon's lock now.
func (s *Store) Serving() (bool, error) {
	held, _, err := locking.Held(s.leadFile())
	return held, err
}

// Where names the workspace in messages: its database file.
func (s *Store) Where() string { return "the SQLite database " + s.path }
