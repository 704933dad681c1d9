package files

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"

	"github.com/workspaced/workspaced/workspace"
)

func (w *Store) parseDoc(what string, data []byte) (map[string]any, error) {
	return workspace.ParseDoc(what, data, w.settings.Limits)
}

func (w *Store) requireTask(id string) error {
	if err := w.checkTask(id); err != nil {
		return err
	}
	if !w.exists(path.Join(workspace.TaskDir(id), "task.json")) {
		return workspace.NotFoundf("task "+id, "list the tasks to see which exist", "no such task")
	}
	return nil
}

// WritePlan writes a new version of plan.json under the task's lock, the
// one the daemon commits the state under, then the plan's: the current
// plan.json (version N) is kept as plans/plan_v<N>.json, and the new one
// gets version N+1, task_id and (if missing) id, created_at and
// created_by. It returns the plan as written. The plan is proposed to the
// daemon by a done marker with output_file "plan.json". Once the state
// has the plan approved (or the task finished) it is refused
// (workspace.PlanClosed) before anything is written.
func (w *Store) WritePlan(ctx context.Context, taskID, agent string, data []byte) (workspace.Plan, error) {
	return w.writePlan(ctx, taskID, agent, data, false)
}

// WriteAmendment writes a new version of an approved plan as WritePlan
// writes one of a plan not yet approved.
func (w *Store) WriteAmendment(ctx context.Context, taskID, agent string, data []byte) (workspace.Plan, error) {
	return w.writePlan(ctx, taskID, agent, data, true)
}

func (w *Store) writePlan(ctx context.Context, taskID, agent string, data []byte, amend bool) (workspace.Plan, error) {
	if err := w.requireTask(taskID); err != nil {
		return workspace.Plan{}, err
	}
	if err := workspace.ValidateID("agent", agent); err != nil {
		return workspace.Plan{}, err
	}
	m, err := w.parseDoc("plan", data)
	if err != nil {
		return workspace.Plan{}, err
	}
	tl, err := w.lockTaskForProduct(ctx, taskID, agent)
	if err != nil {
		return workspace.Plan{}, err
	}
	defer tl.Release()
	if err := w.planClosed(ctx, taskID, amend); err != nil {
		return workspace.Plan{}, err
	}
	name := path.Join(workspace.TaskDir(taskID), "plan.json")
	l, err := w.LockFile(ctx, name, agent)
	if err != nil {
		return workspace.Plan{}, err
	}
	defer l.Release()
	// Read the current version, build and check the new one completely,
	// and only then write: a refused plan leaves plan.json and plans/
	// untouched.
	var old workspace.Plan
	prev, err := w.ReadFile(name)
	switch {
	case err == nil:
		if err := workspace.DecodeStrict(name, prev, w.settings.Limits.MaxDepth, &old); err != nil {
			return workspace.Plan{}, fmt.Errorf("read current plan: %w", err)
		}
	case !errors.Is(err, workspace.ErrNotFound):
		return workspace.Plan{}, fmt.Errorf("read current plan: %w", err)
	}
	out, p, err := workspace.BuildPlan(taskID, agent, m, old.Version+1, w.Now())
	if err != nil {
		return workspace.Plan{}, err
	}
	if prev != nil {
		// plans/plan_v<N>.json is written once: a plan.json that claims a
		// version already kept with other content (written there by
		// hand) must not replace it.
		keep := path.Join(workspace.TaskDir(taskID), "plans", "plan_v"+strconv.Itoa(old.Version)+".json")
		kept, err := w.ReadFile(keep)
		switch {
		case errors.Is(err, workspace.ErrNotFound):
			if err := w.Write(keep, prev); err != nil {
				return workspace.Plan{}, err
			}
		case err != nil:
			return workspace.Plan{}, fmt.Errorf("keep plan v%d: %w", old.Version, err)
		case string(kept) != string(prev):
			return workspace.Plan{}, &workspace.Error{Kind: workspace.ErrConflict, Op: "write plan of task " + taskID,
				Msg:  fmt.Sprintf("plan.json says version %d, but plans/plan_v%d.json already keeps another version %d", old.Version, old.Version, old.Version),
				Hint: "plan.json was changed without a new version; give it the next free version, or move it away, then write again"}
		}
	}
	if err := w.Write(name, out); err != nil {
		return workspace.Plan{}, err
	}
	return p, nil
}

// planClosed is workspace.PlanClosed for the state on disk, read under
// the task's lock the caller holds.
func (w *Store) planClosed(ctx context.Context, taskID string, amend bool) error {
	op := "write the plan of task " + taskID
	if amend {
		op = "amend the plan of task " + taskID
	}
	st, err := w.ReadState(ctx, taskID)
	switch {
	case errors.Is(err, workspace.ErrNotFound):
		return workspace.PlanClosed(op, taskID, nil, amend)
	case err != nil:
		return fmt.Errorf("%s: read the state to see whether the plan is approved: %w", op, err)
	}
	return workspace.PlanClosed(op, taskID, &st, amend)
}

// ReadPlan reads the current plan.json, or plans/plan_v<version>.json when
// version > 0 and is not the current one.
func (w *Store) ReadPlan(ctx context.Context, taskID string, version int) (*workspace.Plan, error) {
	if err := w.checkTask(taskID); err != nil {
		return nil, err
	}
	var p workspace.Plan
	err := w.readJSON(path.Join(workspace.TaskDir(taskID), "plan.json"), &p)
	if err == nil && (version == 0 || p.Version == version) {
		return &p, nil
	}
	if err != nil && !errors.Is(err, workspace.ErrNotFound) {
		return nil, err
	}
	if version == 0 {
		return nil, workspace.NotFoundf("plan of task "+taskID, "write the plan first", "no plan.json")
	}
	var old workspace.Plan
	if err := w.readJSON(path.Join(workspace.TaskDir(taskID), "plans", "plan_v"+strconv.Itoa(version)+".json"), &old); err != nil {
		if errors.Is(err, workspace.ErrNotFound) {
			return nil, workspace.NotFoundf(fmt.Sprintf("plan v%d of task %s", version, taskID), "", "not kept")
		}
		return nil, err
	}
	return &old, nil
}

// WriteOutput writes outputs/<subtask>.json, filling subtask_id, worker_id
// (agent) and completed_at when the document leaves them out; a document
// whose subtask_id or worker_id names another subtask or agent is refused
// (ErrInvalid) naming both. It does not finish the subtask: drop a done
// marker for that.
//
// The write happens under the task's lock. An output that is final — its
// subtask completed, or a done marker reporting it completed waiting for
// the daemon — is never replaced: that is ErrConflict. Any other output
// it replaces is kept as outputs/history/<subtask>.v<N>.json (see
// HistoryName). It returns the output's path relative to the task
// directory.
func (w *Store) WriteOutput(ctx context.Context, taskID, subtaskID, agent string, data []byte) (string, error) {
	if err := w.requireTask(taskID); err != nil {
		return "", err
	}
	if err := workspace.ValidateID("subtask id", subtaskID); err != nil {
		return "", err
	}
	if err := workspace.ValidateID("agent", agent); err != nil {
		return "", err
	}
	return w.writeProduct(ctx, taskID, "output", subtaskID, agent, data,
		func(m map[string]any) (string, []byte, error) {
			return workspace.BuildOutput(subtaskID, agent, m, w.Now())
		},
		func(rel string) error { return w.checkOutputOpen(ctx, taskID, subtaskID, rel) })
}

// WriteReview writes reviews/<id>.json, filling id, reviewer (agent, when
// given) and reviewed_at when the document leaves them out; a document
// whose id or reviewer says otherwise is refused (ErrInvalid) naming both.
//
// The write happens under the task's lock. A review a done marker has
// reported — one waiting in the task directory, or one the daemon
// journaled without rejecting it — is final: writing it again is
// ErrConflict. A review not yet reported that it replaces is kept as
// reviews/history/<id>.v<N>.json. It returns the review's path relative to
// the task directory.
func (w *Store) WriteReview(ctx context.Context, taskID, reviewID, agent string, data []byte) (string, error) {
	if err := w.requireTask(taskID); err != nil {
		return "", err
	}
	if err := workspace.ValidateID("review id", reviewID); err != nil {
		return "", err
	}
	return w.writeProduct(ctx, taskID, "review", reviewID, agent, data,
		func(m map[string]any) (string, []byte, error) {
			return workspace.BuildReview(reviewID, agent, m, w.Now())
		},
		func(rel string) error { return w.checkReviewOpen(taskID, rel) })
}

// writeProduct is what WriteOutput and WriteReview share: the document
// parsed and completed (build), then, under the task's lock, checked
// still open (open) and put in place of the one it replaces, that one
// kept in the history of kind's directory.
func (w *Store) writeProduct(ctx context.Context, taskID, kind, id, agent string, data []byte,
	build func(map[string]any) (string, []byte, error), open func(rel string) error) (string, error) {
	m, err := w.parseDoc(kind, data)
	if err != nil {
		return "", err
	}
	rel, out, err := build(m)
	if err != nil {
		return "", err
	}
	l, err := w.lockTaskForProduct(ctx, taskID, agent)
	if err != nil {
		return "", err
	}
	defer l.Release()
	if err := open(rel); err != nil {
		return "", err
	}
	if _, err := w.replaceProduct(taskID, kind+"s", id, out); err != nil {
		return "", err
	}
	return rel, nil
}
