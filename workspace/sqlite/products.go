package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/internal/dbstore"
)

// What agents write in a task: plans and their versions, outputs and
// reviews with their history, and the markers that report them. Each is a
// row of products under its path in the task ("plan.json",
// "plans/plan_v1.json", "outputs/history/s1.v1.json"), built and checked
// by the workspace package's rules, as the tree builds its files.

// body reads one product row; ok false when there is none.
func body(ctx context.Context, q querier, taskID, rel string) (string, bool, error) {
	var b string
	err := q.QueryRowContext(ctx, "SELECT body FROM products WHERE task_id = $1 AND path = $2", taskID, rel).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	return b, err == nil, err
}

func putBody(ctx context.Context, tx wtx, taskID, rel string, data []byte) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO products (task_id, path, body, updated_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (task_id, path) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at`, taskID, rel, string(data), ts(now()))
	return err
}

// WritePlan writes a new version of plan.json, the current one kept as
// plans/plan_v<N>.json, in one transaction in one write transaction.
func (s *Store) WritePlan(ctx context.Context, taskID, agent string, data []byte) (workspace.Plan, error) {
	if err := requireTask(ctx, s.rdb, taskID); err != nil {
		return workspace.Plan{}, err
	}
	if err := workspace.ValidateID("agent", agent); err != nil {
		return workspace.Plan{}, err
	}
	m, err := workspace.ParseDoc("plan", data, s.settings.Limits)
	if err != nil {
		return workspace.Plan{}, err
	}
	var p workspace.Plan
	err = s.write(ctx, func(tx wtx) error {
		if err := requireTask(ctx, tx, taskID); err != nil {
			return err
		}
		p, err = dbstore.WritePlan(taskID, agent, m, s.Now(), func(rel string) (string, bool, error) {
			return body(ctx, tx, taskID, rel)
		}, func(rel string, data []byte) error {
			return putBody(ctx, tx, taskID, rel, data)
		})
		return err
	})
	if err != nil {
		return workspace.Plan{}, err
	}
	return p, nil
}

// ReadPlan reads the current plan (version 0 or its own) or a kept one.
func (s *Store) ReadPlan(ctx context.Context, taskID string, version int) (*workspace.Plan, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	if err := workspace.ValidateID("task id", taskID); err != nil {
		return nil, err
	}
	return dbstore.ReadPlan(taskID, version, func(rel string) (string, bool, error) {
		return body(ctx, s.rdb, taskID, rel)
	})
}

// readDoc reads the product rel of a task and judges it as the daemon
// would (workspace.DecodeProduct); kind is the product it must be.
func (s *Store) readDoc(ctx context.Context, taskID, rel string) (workspace.Product, []byte, error) {
	if err := requireTask(ctx, s.rdb, taskID); err != nil {
		return workspace.Product{}, nil, err
	}
	b, had, err := body(ctx, s.rdb, taskID, rel)
	if err != nil {
		return workspace.Product{}, nil, err
	}
	return dbstore.DecodeDoc(rel, b, had, s.settings.Limits)
}

// ReadTaskDoc reads one JSON document of a task by its name in the
// protocol, checked as a product, compacted.
func (s *Store) ReadTaskDoc(ctx context.Context, taskID, name string) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	return dbstore.ReadTaskDoc(name, func(rel string) (workspace.Product, []byte, error) { return s.readDoc(ctx, taskID, rel) })
}

// ReadProduct reads and validates what a done marker's output_file names.
func (s *Store) ReadProduct(ctx context.Context, taskID, outputFile string) (workspace.Product, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	return dbstore.ReadProduct(outputFile, func(rel string) (workspace.Product, []byte, error) { return s.readDoc(ctx, taskID, rel) })
}

// ValidateProduct checks a product as ReadProduct does.
func (s *Store) ValidateProduct(ctx context.Context, taskID, outputFile string) error {
	_, err := s.ReadProduct(ctx, taskID, outputFile)
	return err
}

// ListReviews reads every review of a task, by reviewed_at then id; a
// review that does not validate is named in the second list.
func (s *Store) ListReviews(ctx context.Context, taskID string) ([]workspace.Review, []workspace.Skipped, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	if err := requireTask(ctx, s.rdb, taskID); err != nil {
		return nil, nil, err
	}
	all, err := pathBodies(s.rdb.QueryContext(ctx, `SELECT path, body FROM products WHERE task_id = $1 AND path LIKE 'reviews/%'
		AND path NOT LIKE 'reviews/history/%' ORDER BY path`, taskID))
	if err != nil {
		return nil, nil, fmt.Errorf("list reviews of task %s: %w", taskID, err)
	}
	reviews, skipped := dbstore.Reviews(all, s.settings.Limits)
	return reviews, skipped, nil
}

// ReadTaskFile reads a document a thread's buffer names inside a task, at
// most max bytes (more is ErrUnsafe); a name outside the task is
// ErrInvalid.
func (s *Store) ReadTaskFile(ctx context.Context, taskID, name string, max int64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	if err := requireTask(ctx, s.rdb, taskID); err != nil {
		return nil, err
	}
	clean, err := dbstore.TaskFileName(name)
	if err != nil {
		return nil, err
	}
	var data string
	switch clean {
	case "task.json":
		err = s.rdb.QueryRowContext(ctx, "SELECT doc FROM tasks WHERE id = $1", taskID).Scan(&data)
	case "state.json":
		err = s.rdb.QueryRowContext(ctx, "SELECT doc FROM states WHERE task_id = $1", taskID).Scan(&data)
	default:
		if id, ok := dbstore.ThreadFile(clean); ok {
			err = s.rdb.QueryRowContext(ctx, "SELECT doc FROM threads WHERE task_id = $1 AND id = $2", taskID, id).Scan(&data)
		} else {
			err = s.rdb.QueryRowContext(ctx, "SELECT body FROM products WHERE task_id = $1 AND path = $2", taskID, clean).Scan(&data)
		}
	}
	missing := errors.Is(err, sql.ErrNoRows)
	if err != nil && !missing {
		return nil, err
	}
	return dbstore.TaskFile(taskID, name, data, missing, max)
}

// waitingDone reads the done markers of a task waiting for the daemon.
func waitingDone(ctx context.Context, tx wtx, taskID string) ([]workspace.WaitingDone, error) {
	rows, err := tx.QueryContext(ctx, "SELECT name, body FROM markers WHERE task_id = $1 AND kind = 'done' ORDER BY id", taskID)
	var out []workspace.WaitingDone
	_, err = collect(rows, err, func(r *sql.Rows) (struct{}, error) {
		var name, b string
		if err := r.Scan(&name, &b); err != nil {
			return struct{}{}, err
		}
		out = dbstore.WaitingDone(out, name, b)
		return struct{}{}, nil
	})
	return out, err
}

// replace writes data as the product dir/id.json of a task in tx, keeping what it replaces as the next version of the history.
func replace(ctx context.Context, tx wtx, taskID, dir, id string, data []byte) error {
	get := func(rel string) (string, bool, error) { return body(ctx, tx, taskID, rel) }
	kept := func(prefix string) ([]string, error) {
		return strings1(tx.QueryContext(ctx, "SELECT path FROM products WHERE task_id = $1 AND substr(path, 1, length($2)) = $2", taskID, prefix))
	}
	put := func(rel string, data []byte) error { return putBody(ctx, tx, taskID, rel, data) }
	return dbstore.Replace(dir, id, data, get, kept, put)
}

func pathBodies(rows *sql.Rows, err error) ([]dbstore.PathBody, error) {
	return collect(rows, err, func(r *sql.Rows) (dbstore.PathBody, error) {
		var pb dbstore.PathBody
		return pb, r.Scan(&pb.Path, &pb.Body)
	})
}

// WriteOutput writes outputs/<subtask>.json (workspace.BuildOutput) under
// the task's row lock: a final output is ErrConflict
// (workspace.OutputFinal), another one replaced is kept in history.
func (s *Store) WriteOutput(ctx context.Context, taskID, subtaskID, agent string, data []byte) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	// A missing task is found by the insert (its foreign key).
	if err := workspace.ValidateID("task id", taskID); err != nil {
		return "", err
	}
	rel, out, err := dbstore.BuildOutput(subtaskID, agent, data, s.settings.Limits, s.Now())
	if err != nil {
		return "", err
	}
	err = s.writeUnlessFinal(ctx, taskID, "outputs", subtaskID, out, func(tx wtx, waiting []workspace.WaitingDone) error {
		var doc string
		err := tx.QueryRowContext(ctx, "SELECT doc FROM states WHERE task_id = $1", taskID).Scan(&doc)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		return dbstore.OutputFinal(taskID, subtaskID, rel, doc, err == nil, waiting)
	})
	if err != nil {
		return "", err
	}
	return rel, nil
}

// writeUnlessFinal replaces dir/<id>.json with data (the replaced one
// kept in history) in one transaction in one write transaction, unless
// final, given the done markers waiting, says the product may no longer
// change.
func (s *Store) writeUnlessFinal(ctx context.Context, taskID, dir, id string, data []byte,
	final func(tx wtx, waiting []workspace.WaitingDone) error) error {
	return s.write(ctx, func(tx wtx) error {
		if err := requireTask(ctx, tx, taskID); err != nil {
			return err
		}
		waiting, err := waitingDone(ctx, tx, taskID)
		if err != nil {
			return err
		}
		if err := final(tx, waiting); err != nil {
			return err
		}
		return replace(ctx, tx, taskID, dir, id, data)
	})
}

// WriteReview writes reviews/<id>.json (workspace.BuildReview) under the
// task's row lock: a reported review is ErrConflict
// (workspace.ReviewFinal), another one replaced is kept in history.
func (s *Store) WriteReview(ctx context.Context, taskID, reviewID, agent string, data []byte) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	if err := requireTask(ctx, s.rdb, taskID); err != nil {
		return "", err
	}
	rel, out, err := dbstore.BuildReview(reviewID, agent, data, s.settings.Limits, s.Now())
	if err != nil {
		return "", err
	}
	err = s.writeUnlessFinal(ctx, taskID, "reviews", reviewID, out, func(tx wtx, waiting []workspace.WaitingDone) error {
		var seq int64
		err := tx.QueryRowContext(ctx, `SELECT seq FROM journal WHERE task_id = $1 AND json_extract(record, '$.kind') = 'done'
			AND coalesce(json_extract(record, '$.rejected'), '') = '' AND json_extract(record, '$.marker.output_file') = $2
			ORDER BY seq LIMIT 1`, taskID, rel).Scan(&seq)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("write review %s: read the journal to see whether it was reported: %w", rel, err)
		}
		return workspace.ReviewFinal(rel, waiting, seq)
	})
	if err != nil {
		return "", err
	}
	return rel, nil
}

// WriteClaim records an agent's claim of a subtask as a marker row.
func (s *Store) WriteClaim(ctx context.Context, taskID, agent, subtaskID string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	// A missing task is found by the insert (its foreign key).
	if err := workspace.ValidateID("task id", taskID); err != nil {
		return "", err
	}
	if err := workspace.ValidateID("subtask id", subtaskID); err != nil {
		return "", err
	}
	now := s.Now()
	return s.DropMarker(ctx, taskID, workspace.KindClaim, workspace.Marker{AgentID: agent, SubtaskID: subtaskID, ClaimedAt: &now})
}

// WriteDone checks a done request (workspace.DoneMarker) and the product
// it names, then records the marker as a row.
func (s *Store) WriteDone(ctx context.Context, req workspace.DoneRequest) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	// A missing task is found by readDoc, or by the insert (its foreign
	// key).
	if err := workspace.ValidateID("task id", req.TaskID); err != nil {
		return "", err
	}
	m, kind, err := workspace.DoneMarker(req, s.Now())
	if err != nil {
		return "", err
	}
	if kind != workspace.ProductNone {
		if _, _, err := s.readDoc(ctx, req.TaskID, req.OutputFile); err != nil {
			return "", err
		}
	}
	return s.DropMarker(ctx, req.TaskID, workspace.KindDone, m)
}
