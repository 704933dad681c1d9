package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/workspaced/workspaced/workspace"
)

// What agents write in a task: plans and their versions, outputs and
// reviews with their history, and the markers that report them. Each is a
// row of products under its path in the task ("plan.json",
// "plans/plan_v1.json", "outputs/history/s1.v1.json"), built and checked
// by the workspace package's rules, as the tree builds its files.

// ReadBody reads one product row; had is false when there is none.
func ReadBody(ctx context.Context, q Executor, taskID, rel string) (string, bool, error) {
	var b string
	err := q.QueryRow(ctx, "SELECT body FROM products WHERE task_id = $1 AND path = $2", taskID, rel).Scan(&b)
	if errors.Is(err, ErrNoRows) {
		return "", false, nil
	}
	return b, err == nil, err
}

// putBody writes one product row, created or replaced.
func (s *Store) putBody(ctx context.Context, tx Executor, taskID, rel string, data []byte) error {
	_, err := tx.Exec(ctx, s.q.putBody, taskID, rel, string(data))
	return err
}

// WritePlan writes a new version of plan.json, the current one kept as
// plans/plan_v<N>.json, in one write transaction holding the task, which
// a commit of the state waits for (and waits for one): once the state has
// the plan approved (or the task finished) it is refused
// (workspace.PlanClosed) before anything is written.
func (s *Store) WritePlan(ctx context.Context, taskID, agent string, data []byte) (workspace.Plan, error) {
	return s.writePlan(ctx, taskID, agent, data, false)
}

// WriteAmendment writes a new version of an approved plan as WritePlan
// writes one of a plan not yet approved.
func (s *Store) WriteAmendment(ctx context.Context, taskID, agent string, data []byte) (workspace.Plan, error) {
	return s.writePlan(ctx, taskID, agent, data, true)
}

func (s *Store) writePlan(ctx context.Context, taskID, agent string, data []byte, amend bool) (workspace.Plan, error) {
	if err := RequireTask(ctx, s.r, taskID); err != nil {
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
	err = s.d.WriteTask(ctx, taskID, func(tx Executor) error {
		if err := planClosed(ctx, tx, taskID, amend); err != nil {
			return err
		}
		p, err = WritePlan(taskID, agent, m, s.Now(), func(rel string) (string, bool, error) {
			return ReadBody(ctx, tx, taskID, rel)
		}, func(rel string, data []byte) error {
			return s.putBody(ctx, tx, taskID, rel, data)
		})
		return err
	})
	if err != nil {
		return workspace.Plan{}, err
	}
	return p, nil
}

// planClosed is workspace.PlanClosed for the state row as the write
// transaction tx, holding the task, sees it.
func planClosed(ctx context.Context, tx Executor, taskID string, amend bool) error {
	op := "write the plan of task " + taskID
	if amend {
		op = "amend the plan of task " + taskID
	}
	var doc string
	err := tx.QueryRow(ctx, "SELECT doc FROM states WHERE task_id = $1", taskID).Scan(&doc)
	switch {
	case errors.Is(err, ErrNoRows):
		return workspace.PlanClosed(op, taskID, nil, amend)
	case err != nil:
		return err
	}
	st, err := DecodeState(taskID, doc)
	if err != nil {
		return fmt.Errorf("%s: read the state to see whether the plan is approved: %w", op, err)
	}
	return workspace.PlanClosed(op, taskID, &st, amend)
}

// ReadPlan reads the current plan (version 0 or its own) or a kept one.
func (s *Store) ReadPlan(ctx context.Context, taskID string, version int) (*workspace.Plan, error) {
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	if err := workspace.ValidateID("task id", taskID); err != nil {
		return nil, err
	}
	return ReadPlan(taskID, version, func(rel string) (string, bool, error) {
		return ReadBody(ctx, s.r, taskID, rel)
	})
}

// readDoc reads the product rel of a task and judges it as the daemon
// would (workspace.DecodeProduct).
func (s *Store) readDoc(ctx context.Context, taskID, rel string) (workspace.Product, []byte, error) {
	if err := RequireTask(ctx, s.r, taskID); err != nil {
		return workspace.Product{}, nil, err
	}
	b, had, err := ReadBody(ctx, s.r, taskID, rel)
	if err != nil {
		return workspace.Product{}, nil, err
	}
	return DecodeDoc(rel, b, had, s.settings.Limits)
}

// ReadTaskDoc reads one JSON document of a task by its name in the
// protocol, checked as a product, compacted.
func (s *Store) ReadTaskDoc(ctx context.Context, taskID, name string) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	return ReadTaskDoc(name, func(rel string) (workspace.Product, []byte, error) { return s.readDoc(ctx, taskID, rel) })
}

// ReadProduct reads and validates what a done marker's output_file names.
func (s *Store) ReadProduct(ctx context.Context, taskID, outputFile string) (workspace.Product, error) {
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	return ReadProduct(outputFile, func(rel string) (workspace.Product, []byte, error) { return s.readDoc(ctx, taskID, rel) })
}

// ValidateProduct checks a product as ReadProduct does.
func (s *Store) ValidateProduct(ctx context.Context, taskID, outputFile string) error {
	_, err := s.ReadProduct(ctx, taskID, outputFile)
	return err
}

// PathBodies reads a result of path, body rows.
func PathBodies(rows Rows, err error) ([]PathBody, error) {
	return Collect(rows, err, func(r Rows) (PathBody, error) {
		var pb PathBody
		return pb, r.Scan(&pb.Path, &pb.Body)
	})
}

// ListReviews reads every review of a task, by reviewed_at then id; a
// review that does not validate is named in the second list.
func (s *Store) ListReviews(ctx context.Context, taskID string) ([]workspace.Review, []workspace.Skipped, error) {
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	if err := RequireTask(ctx, s.r, taskID); err != nil {
		return nil, nil, err
	}
	all, err := PathBodies(s.r.Query(ctx, `SELECT path, body FROM products WHERE task_id = $1 AND path LIKE 'reviews/%'
		AND path NOT LIKE 'reviews/history/%' ORDER BY path`+s.dl.Collate, taskID))
	if err != nil {
		return nil, nil, fmt.Errorf("list reviews of task %s: %w", taskID, err)
	}
	reviews, skipped := Reviews(all, s.settings.Limits)
	return reviews, skipped, nil
}

// ReadTaskFile reads a document a thread's buffer names inside a task, at
// most max bytes (more is ErrUnsafe); a name outside the task is
// ErrInvalid.
func (s *Store) ReadTaskFile(ctx context.Context, taskID, name string, max int64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	if err := RequireTask(ctx, s.r, taskID); err != nil {
		return nil, err
	}
	clean, err := TaskFileName(name)
	if err != nil {
		return nil, err
	}
	var data string
	switch clean {
	case "task.json":
		err = s.r.QueryRow(ctx, "SELECT doc FROM tasks WHERE id = $1", taskID).Scan(&data)
	case "state.json":
		err = s.r.QueryRow(ctx, "SELECT doc FROM states WHERE task_id = $1", taskID).Scan(&data)
	default:
		if id, ok := ThreadFile(clean); ok {
			err = s.r.QueryRow(ctx, "SELECT doc FROM threads WHERE task_id = $1 AND id = $2", taskID, id).Scan(&data)
		} else {
			err = s.r.QueryRow(ctx, "SELECT body FROM products WHERE task_id = $1 AND path = $2", taskID, clean).Scan(&data)
		}
	}
	missing := errors.Is(err, ErrNoRows)
	if err != nil && !missing {
		return nil, err
	}
	return TaskFile(taskID, name, data, missing, max)
}

// waitingDone reads the done markers of a task waiting for the daemon.
func waitingDone(ctx context.Context, tx Executor, taskID string) ([]workspace.WaitingDone, error) {
	rows, err := tx.Query(ctx, "SELECT name, body FROM markers WHERE task_id = $1 AND kind = 'done' ORDER BY id", taskID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []workspace.WaitingDone
	for rows.Next() {
		var name, b string
		if err := rows.Scan(&name, &b); err != nil {
			return nil, err
		}
		out = WaitingDone(out, name, b)
	}
	return out, rows.Err()
}

// replace writes data as the product dir/id.json of a task in tx,
// keeping what it replaces as the next version of the history.
func (s *Store) replace(ctx context.Context, tx Executor, taskID, dir, id string, data []byte) error {
	get := func(rel string) (string, bool, error) { return ReadBody(ctx, tx, taskID, rel) }
	kept := func(prefix string) ([]string, error) {
		return Strings(tx.Query(ctx, "SELECT path FROM products WHERE task_id = $1 AND "+s.dl.HasPrefix("path", "$2"), taskID, prefix))
	}
	put := func(rel string, data []byte) error { return s.putBody(ctx, tx, taskID, rel, data) }
	return Replace(dir, id, data, get, kept, put)
}

// WriteOutput writes outputs/<subtask>.json (workspace.BuildOutput) in a
// write holding the task: a final output is ErrConflict
// (workspace.OutputFinal), another one replaced is kept in history.
func (s *Store) WriteOutput(ctx context.Context, taskID, subtaskID, agent string, data []byte) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	if err := RequireTask(ctx, s.r, taskID); err != nil {
		return "", err
	}
	rel, out, err := BuildOutput(subtaskID, agent, data, s.settings.Limits, s.Now())
	if err != nil {
		return "", err
	}
	err = s.writeUnlessFinal(ctx, taskID, "outputs", subtaskID, out, func(tx Executor, waiting []workspace.WaitingDone) error {
		var doc string
		err := tx.QueryRow(ctx, "SELECT doc FROM states WHERE task_id = $1", taskID).Scan(&doc)
		if err != nil && !errors.Is(err, ErrNoRows) {
			return err
		}
		return OutputFinal(taskID, subtaskID, rel, doc, err == nil, waiting)
	})
	if err != nil {
		return "", err
	}
	return rel, nil
}

// writeUnlessFinal replaces dir/<id>.json with data (the replaced one
// kept in history) in one write holding the task, unless final, given
// the done markers waiting, says the product may no longer change.
func (s *Store) writeUnlessFinal(ctx context.Context, taskID, dir, id string, data []byte,
	final func(tx Executor, waiting []workspace.WaitingDone) error) error {
	return s.d.WriteTask(ctx, taskID, func(tx Executor) error {
		waiting, err := waitingDone(ctx, tx, taskID)
		if err != nil {
			return err
		}
		if err := final(tx, waiting); err != nil {
			return err
		}
		return s.replace(ctx, tx, taskID, dir, id, data)
	})
}

// WriteReview writes reviews/<id>.json (workspace.BuildReview) in a
// write holding the task: a reported review is ErrConflict
// (workspace.ReviewFinal), another one replaced is kept in history.
func (s *Store) WriteReview(ctx context.Context, taskID, reviewID, agent string, data []byte) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	if err := RequireTask(ctx, s.r, taskID); err != nil {
		return "", err
	}
	rel, out, err := BuildReview(reviewID, agent, data, s.settings.Limits, s.Now())
	if err != nil {
		return "", err
	}
	err = s.writeUnlessFinal(ctx, taskID, "reviews", reviewID, out, func(tx Executor, waiting []workspace.WaitingDone) error {
		seq, err := reportedIn(ctx, tx, taskID, rel)
		if err != nil {
			return fmt.Errorf("write review %s: read the journal to see whether it was reported: %w", rel, err)
		}
		return workspace.ReviewFinal(rel, waiting, seq)
	})
	if err != nil {
		return "", err
	}
	return rel, nil
}

// reportedIn returns the sequence number of the first done marker the
// journal of task taskID took without rejecting it that reported
// outputFile, or 0 when none did. The records are read here rather than
// by the database's JSON functions: a record may hold \u0000 (a NUL in a
// plan's text), which PostgreSQL's jsonb refuses.
func reportedIn(ctx context.Context, q Executor, taskID, outputFile string) (int64, error) {
	rows, err := q.Query(ctx, "SELECT seq, record FROM journal WHERE task_id = $1 ORDER BY seq", taskID)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	for rows.Next() {
		var seq int64
		var body string
		if err := rows.Scan(&seq, &body); err != nil {
			return 0, err
		}
		var rec struct {
			Kind     string `json:"kind"`
			Rejected string `json:"rejected"`
			Marker   struct {
				OutputFile string `json:"output_file"`
			} `json:"marker"`
		}
		if json.Unmarshal([]byte(body), &rec) == nil && rec.Kind == "done" && rec.Rejected == "" && rec.Marker.OutputFile == outputFile {
			return seq, nil
		}
	}
	return 0, rows.Err()
}

// WriteClaim records an agent's claim of a subtask as a marker row.
func (s *Store) WriteClaim(ctx context.Context, taskID, agent, subtaskID string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	if err := workspace.ValidateID("task id", taskID); err != nil {
		return "", err
	}
	if err := workspace.ValidateID("subtask id", subtaskID); err != nil {
		return "", err
	}
	now := s.Now()
	return s.DropMarker(ctx, taskID, workspace.KindClaim, workspace.Marker{AgentID: agent, SubtaskID: subtaskID, ClaimedAt: &now, Token: workspace.TokenOf(ctx)})
}

// WriteDone checks a done request (workspace.DoneMarker) and the product
// it names, then records the marker as a row.
func (s *Store) WriteDone(ctx context.Context, req workspace.DoneRequest) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
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
	m.Token = workspace.TokenOf(ctx)
	if kind != workspace.ProductNone {
		if _, _, err := s.readDoc(ctx, req.TaskID, req.OutputFile); err != nil {
			return "", err
		}
	}
	return s.DropMarker(ctx, req.TaskID, workspace.KindDone, m)
}
