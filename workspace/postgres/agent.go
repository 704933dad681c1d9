package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/schemas"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// What an agent does on PostgreSQL, in Go: create a task, write a
// product, drop a marker; and what it reads back: the state and the
// journal. Every value goes in as a parameter.

// now is the store's clock, to the millisecond as in the tree.
func now() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

// PutTask stores task t as it is (its id checked, its document
// validated); ErrConflict when a task of that id exists. CreateTask is
// the Store's way, from a request.
func (s *Store) PutTask(ctx context.Context, t workspace.Task) error {
	if err := workspace.ValidateID("task id", t.ID); err != nil {
		return err
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = now()
	}
	data, err := atomicfile.Marshal(t)
	if err != nil {
		return err
	}
	if err := schemas.Validate(schemas.KindTask, data); err != nil {
		return &workspace.Error{Kind: workspace.ErrInvalid, Op: "create task " + t.ID, Err: err}
	}
	_, err = s.pool.Exec(ctx, "INSERT INTO tasks (id, created_at, doc) VALUES ($1, $2, $3)", t.ID, t.CreatedAt, string(data))
	if isUnique(err) {
		return &workspace.Error{Kind: workspace.ErrConflict, Op: "create task " + t.ID, Msg: "a task of that id exists", Hint: "pick another id"}
	}
	return err
}

// PutProduct stores data as the product path of a task ("plan.json",
// "outputs/s1.json", "reviews/r1.json"), checked as the daemon will check
// it.
func (s *Store) PutProduct(ctx context.Context, taskID, path string, data []byte) error {
	if _, err := workspace.DecodeProduct(path, data, s.Settings().Limits); err != nil {
		return err
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO products (task_id, path, body) VALUES ($1, $2, $3)
		ON CONFLICT (task_id, path) DO UPDATE SET body = excluded.body, updated_at = now()`, taskID, path, string(data))
	if isForeignKey(err) {
		return sqlstore.NotFoundTask(taskID)
	}
	return err
}

// DropNamedMarker inserts a marker of kind under a name of the caller's
// choosing, as an agent in any language does; a name the journal or a
// waiting marker already holds is refused at once (ErrConflict).
func (s *Store) DropNamedMarker(ctx context.Context, taskID, kind, name string, m workspace.Marker) error {
	if k, ok := workspace.IsMarkerName(name); !ok || k != kind {
		return &workspace.Error{Kind: workspace.ErrInvalid, Op: "drop marker " + name, Msg: "not the name of a " + kind + " marker"}
	}
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, "INSERT INTO markers (task_id, kind, name, body) VALUES ($1, $2, $3, $4)", taskID, kind, name, string(data))
	switch {
	case isForeignKey(err):
		return sqlstore.NotFoundTask(taskID)
	case isUnique(err):
		return &workspace.Error{Kind: workspace.ErrConflict, Op: "drop marker " + name + " for task " + taskID, Err: err,
			Hint: "never reuse a marker name: give each marker a new random suffix"}
	case err != nil:
		return fmt.Errorf("drop marker for task %s: %w", taskID, err)
	}
	return nil
}

func isUnique(err error) bool     { return pgCode(err) == "23505" }
func isForeignKey(err error) bool { return pgCode(err) == "23503" }

func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}
