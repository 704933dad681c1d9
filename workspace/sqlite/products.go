package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/workspaced/workspaced/workspace"
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
		prev, had, err := body(ctx, tx, taskID, "plan.json")
		if err != nil {
			return fmt.Errorf("read current plan: %w", err)
		}
		var old workspace.Plan
		if had {
			if err := json.Unmarshal([]byte(prev), &old); err != nil {
				return fmt.Errorf("read current plan: %w", err)
			}
		}
		out, plan, err := workspace.BuildPlan(taskID, agent, m, old.Version+1, s.Now())
		if err != nil {
			return err
		}
		if had {
			keep := "plans/plan_v" + strconv.Itoa(old.Version) + ".json"
			kept, there, err := body(ctx, tx, taskID, keep)
			switch {
			case err != nil:
				return fmt.Errorf("keep plan v%d: %w", old.Version, err)
			case !there:
				if err := putBody(ctx, tx, taskID, keep, []byte(prev)); err != nil {
					return err
				}
			case kept != prev:
				return &workspace.Error{Kind: workspace.ErrConflict, Op: "write plan of task " + taskID,
					Msg:  fmt.Sprintf("plan.json says version %d, but plans/plan_v%d.json already keeps another version %d", old.Version, old.Version, old.Version),
					Hint: "plan.json was changed without a new version; give it the next free version, then write again"}
			}
		}
		p = plan
		return putBody(ctx, tx, taskID, "plan.json", out)
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
	var p workspace.Plan
	cur, had, err := body(ctx, s.rdb, taskID, "plan.json")
	if err != nil {
		return nil, err
	}
	if had {
		if err := json.Unmarshal([]byte(cur), &p); err != nil {
			return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "read plan of task " + taskID, Err: err}
		}
		if version == 0 || p.Version == version {
			return &p, nil
		}
	}
	if version == 0 {
		return nil, &workspace.Error{Kind: workspace.ErrNotFound, Op: "plan of task " + taskID, Msg: "no plan.json", Hint: "write the plan first"}
	}
	old, had, err := body(ctx, s.rdb, taskID, "plans/plan_v"+strconv.Itoa(version)+".json")
	if err != nil {
		return nil, err
	}
	if !had {
		return nil, &workspace.Error{Kind: workspace.ErrNotFound, Op: fmt.Sprintf("plan v%d of task %s", version, taskID), Msg: "not kept"}
	}
	var op workspace.Plan
	if err := json.Unmarshal([]byte(old), &op); err != nil {
		return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: fmt.Sprintf("read plan v%d of task %s", version, taskID), Err: err}
	}
	return &op, nil
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
	if !had {
		return workspace.Product{}, nil, &workspace.Error{Kind: workspace.ErrNotFound, Op: "product " + rel,
			Msg: fmt.Sprintf("output file %s does not exist", rel), Hint: "write the product before dropping the marker"}
	}
	// A kept plan version is judged as the plan it was.
	as := rel
	if strings.HasPrefix(rel, "plans/") {
		as = "plan.json"
	}
	p, err := workspace.DecodeProduct(as, []byte(b), s.settings.Limits)
	return p, []byte(b), err
}

// ReadTaskDoc reads one JSON document of a task by its name in the
// protocol, checked as a product, compacted.
func (s *Store) ReadTaskDoc(ctx context.Context, taskID, name string) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	if !taskDocName(name) {
		return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "read " + name,
			Msg: "not a document of a task: plan.json, plans/plan_v<N>.json, outputs/<id>.json or reviews/<id>.json"}
	}
	_, data, err := s.readDoc(ctx, taskID, name)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := json.Compact(&b, data); err != nil {
		return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "read " + name, Err: err}
	}
	return b.Bytes(), nil
}

// taskDocName says whether name is a document ReadTaskDoc reads.
func taskDocName(name string) bool {
	if v, ok := strings.CutPrefix(name, "plans/plan_v"); ok {
		v, ok = strings.CutSuffix(v, ".json")
		n, err := strconv.Atoi(v)
		return ok && err == nil && n > 0 && strconv.Itoa(n) == v
	}
	kind, _, err := workspace.ClassifyOutput(name)
	return err == nil && kind != workspace.ProductNone
}

// ReadProduct reads and validates what a done marker's output_file names.
func (s *Store) ReadProduct(ctx context.Context, taskID, outputFile string) (workspace.Product, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	kind, _, err := workspace.ClassifyOutput(outputFile)
	if err != nil {
		return workspace.Product{}, &workspace.Error{Kind: workspace.ErrInvalid, Op: "product", Err: err}
	}
	if kind == workspace.ProductNone {
		return workspace.Product{Kind: kind}, nil
	}
	p, _, err := s.readDoc(ctx, taskID, outputFile)
	return p, err
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
	reviews := []workspace.Review{}
	var skipped []workspace.Skipped
	for _, r := range all {
		p, err := workspace.DecodeProduct(r.Path, []byte(r.Body), s.settings.Limits)
		if err == nil && p.Review == nil {
			err = fmt.Errorf("not a review")
		}
		if err != nil {
			skipped = append(skipped, workspace.Skipped{File: r.Path, Reason: err.Error()})
			continue
		}
		reviews = append(reviews, *p.Review)
	}
	workspace.SortReviews(reviews)
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
	if name == "" || strings.HasPrefix(name, "/") || strings.HasPrefix(name, `\`) {
		return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "read " + name, Msg: "an absolute path", Hint: "name a file inside the task directory"}
	}
	clean := path.Clean(name)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "read " + name, Msg: "names a file outside the task directory", Hint: "name a file inside the task directory"}
	}
	var data string
	var err error
	switch clean {
	case "task.json":
		err = s.rdb.QueryRowContext(ctx, "SELECT doc FROM tasks WHERE id = $1", taskID).Scan(&data)
	case "state.json":
		err = s.rdb.QueryRowContext(ctx, "SELECT doc FROM states WHERE task_id = $1", taskID).Scan(&data)
	default:
		if id, ok := strings.CutPrefix(clean, "threads/"); ok && strings.HasSuffix(id, ".json") {
			err = s.rdb.QueryRowContext(ctx, "SELECT doc FROM threads WHERE task_id = $1 AND id = $2", taskID, strings.TrimSuffix(id, ".json")).Scan(&data)
		} else {
			err = s.rdb.QueryRowContext(ctx, "SELECT body FROM products WHERE task_id = $1 AND path = $2", taskID, clean).Scan(&data)
		}
	}
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &workspace.Error{Kind: workspace.ErrNotFound, Op: "read " + name, Msg: "no such file in task " + taskID}
	}
	if err != nil {
		return nil, err
	}
	if max >= 0 && int64(len(data)) > max {
		return nil, &workspace.Error{Kind: workspace.ErrUnsafe, Op: "read " + name, Msg: fmt.Sprintf("%d bytes, more than the limit of %d", len(data), max)}
	}
	return []byte(data), nil
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
		var m workspace.Marker
		if json.Unmarshal([]byte(b), &m) == nil {
			out = append(out, workspace.WaitingDone{Name: name, Marker: m})
		}
		return struct{}{}, nil
	})
	return out, err
}

// replace writes data as the product dir/id.json of a task in tx, keeping what it replaces as the next version of the history.
func replace(ctx context.Context, tx wtx, taskID, dir, id string, data []byte) error {
	rel := path.Join(dir, id+".json")
	prev, had, err := body(ctx, tx, taskID, rel)
	if err != nil {
		return err
	}
	if had && prev == string(data) {
		return nil
	}
	if had {
		names, err := strings1(tx.QueryContext(ctx, "SELECT path FROM products WHERE task_id = $1 AND substr(path, 1, length($2)) = $2", taskID, path.Join(dir, workspace.HistoryDir)+"/"))
		if err != nil {
			return err
		}
		top := 0
		for _, n := range names {
			if pid, v, ok := workspace.HistoryVersion(path.Base(n)); ok && pid == id {
				top = max(top, v)
			}
		}
		if err := putBody(ctx, tx, taskID, workspace.HistoryName(dir, id, top+1), []byte(prev)); err != nil {
			return fmt.Errorf("keep the replaced %s: %w", rel, err)
		}
	}
	return putBody(ctx, tx, taskID, rel, data)
}

// pathBody is one row of a query selecting path, body.
type pathBody struct{ Path, Body string }

func pathBodies(rows *sql.Rows, err error) ([]pathBody, error) {
	return collect(rows, err, func(r *sql.Rows) (pathBody, error) {
		var pb pathBody
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
	if err := workspace.ValidateID("subtask id", subtaskID); err != nil {
		return "", err
	}
	if err := workspace.ValidateID("agent", agent); err != nil {
		return "", err
	}
	m, err := workspace.ParseDoc("output", data, s.settings.Limits)
	if err != nil {
		return "", err
	}
	rel, out, err := workspace.BuildOutput(subtaskID, agent, m, s.Now())
	if err != nil {
		return "", err
	}
	err = s.writeUnlessFinal(ctx, taskID, "outputs", subtaskID, out, func(tx wtx, waiting []workspace.WaitingDone) error {
		var state *workspace.State
		var doc string
		err := tx.QueryRowContext(ctx, "SELECT doc FROM states WHERE task_id = $1", taskID).Scan(&doc)
		switch {
		case err == nil:
			st, err := decodeState(taskID, doc)
			if err != nil {
				return fmt.Errorf("write output %s: read the state to see whether it is final: %w", rel, err)
			}
			state = &st
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		return workspace.OutputFinal(subtaskID, rel, state, waiting)
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
	if err := workspace.ValidateID("review id", reviewID); err != nil {
		return "", err
	}
	m, err := workspace.ParseDoc("review", data, s.settings.Limits)
	if err != nil {
		return "", err
	}
	rel, out, err := workspace.BuildReview(reviewID, agent, m, s.Now())
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
