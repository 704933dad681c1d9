package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/workspaced/workspaced/workspace"
)

// Tasks, the agent cards, the state and the journal: task.json is a row
// of tasks, its root thread a row of threads, and config/agents.json a
// row of files, each the bytes the tree would hold.

// A *Store is a workspace.Store.
var _ workspace.Store = (*Store)(nil)

// putFileSQL writes a row of files.
const putFileSQL = `INSERT INTO files (path, body, updated_at) VALUES ($1, $2, $3)
	ON CONFLICT (path) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at`

// requireTask says ErrNotFound (ErrInvalid for a bad id) unless the task
// exists.
func requireTask(ctx context.Context, q querier, taskID string) error {
	if err := workspace.ValidateID("task id", taskID); err != nil {
		return err
	}
	var one int
	err := q.QueryRowContext(ctx, "SELECT 1 FROM tasks WHERE id = $1", taskID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return notFoundTask(taskID)
	}
	return err
}

// DropNamedMarker inserts a marker of kind under a name of the caller's
// choosing, as an agent in any language does; a name the journal or a
// waiting marker already holds is refused at once (ErrConflict), a name
// no file could have (checkMarkerName) with ErrInvalid.
func (s *Store) DropNamedMarker(ctx context.Context, taskID, kind, name string, m workspace.Marker) error {
	if err := checkMarkerName(kind, name); err != nil {
		return err
	}
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	_, err = s.exec(ctx, "INSERT INTO markers (task_id, kind, name, body, dropped_at) VALUES ($1, $2, $3, $4, $5)",
		taskID, kind, name, string(data), ts(now()))
	switch {
	case isForeignKey(err):
		return notFoundTask(taskID)
	case isRaised(err) || isUnique(err):
		return &workspace.Error{Kind: workspace.ErrConflict, Op: "drop marker " + name + " for task " + taskID, Err: err,
			Hint: "never reuse a marker name: give each marker a new random suffix"}
	case err != nil:
		return fmt.Errorf("drop marker for task %s: %w", taskID, err)
	}
	return nil
}
