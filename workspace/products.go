package workspace

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strconv"

	"github.com/workspaced/workspaced/schemas"
)

// Agent-written products (plans, outputs, reviews) are kept with every
// field the agent wrote: they are decoded into a generic map (numbers kept
// exact) and re-encoded canonically, keys sorted.

func (w *Workspace) parseDoc(what string, data []byte) (map[string]any, error) {
	if len(data) > w.settings.Limits.ValueMaxBytes*16 {
		return nil, invalidf(what, "", "document is %d bytes, over the limit", len(data))
	}
	if err := CheckDepth(data, w.settings.Limits.MaxDepth); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, &Error{Kind: ErrInvalid, Op: "parse " + what, Err: describeJSONError(data, err), Hint: "the file must hold one JSON object"}
	}
	if dec.More() {
		return nil, invalidf("parse "+what, "", "trailing data after the JSON object")
	}
	if m == nil {
		return nil, invalidf("parse "+what, "the file must hold one JSON object", "got null")
	}
	return m, nil
}

func (w *Workspace) writeDoc(kind schemas.Kind, name string, m map[string]any) ([]byte, error) {
	data, err := marshalValidated(kind, m)
	if err != nil {
		return nil, err
	}
	if err := w.Write(name, data); err != nil {
		return nil, err
	}
	return data, nil
}

func (w *Workspace) requireTask(id string) error {
	if err := w.checkTask(id); err != nil {
		return err
	}
	if !w.exists(path.Join(TaskDir(id), "task.json")) {
		return notFoundf("task "+id, "list the tasks to see which exist", "no such task")
	}
	return nil
}

// WritePlan writes a new version of plan.json under the plan's lock: the
// current plan.json (version N) is kept as plans/plan_v<N>.json, and the new
// one gets version N+1, task_id and (if missing) id, created_at and
// created_by. It returns the plan as written. The plan is proposed to the
// daemon by a done marker with output_file "plan.json".
func (w *Workspace) WritePlan(ctx context.Context, taskID, agent string, data []byte) (Plan, error) {
	if err := w.requireTask(taskID); err != nil {
		return Plan{}, err
	}
	if err := ValidateID("agent", agent); err != nil {
		return Plan{}, err
	}
	m, err := w.parseDoc("plan", data)
	if err != nil {
		return Plan{}, err
	}
	name := path.Join(TaskDir(taskID), "plan.json")
	l, err := w.LockFile(ctx, name, agent)
	if err != nil {
		return Plan{}, err
	}
	defer l.Release()
	// Read the current version, build and check the new one completely,
	// and only then write: a refused plan leaves plan.json and plans/
	// untouched.
	version := 1
	var old Plan
	prev, err := w.ReadFile(name)
	switch {
	case err == nil:
		if err := decodeStrict(name, prev, w.settings.Limits.MaxDepth, &old); err != nil {
			return Plan{}, fmt.Errorf("read current plan: %w", err)
		}
		version = old.Version + 1
	case !errors.Is(err, ErrNotFound):
		return Plan{}, fmt.Errorf("read current plan: %w", err)
	}
	m["version"] = version
	m["task_id"] = taskID
	if _, ok := m["id"]; !ok {
		m["id"] = "plan_" + taskID
	}
	if _, ok := m["created_at"]; !ok {
		m["created_at"] = w.Now().Format(TimeFormat)
	}
	if _, ok := m["created_by"]; !ok {
		m["created_by"] = agent
	}
	if id, _ := m["id"].(string); ValidateID("plan id", id) != nil {
		return Plan{}, ValidateID("plan id", id)
	}
	out, err := marshalValidated(schemas.KindPlan, m)
	if err != nil {
		return Plan{}, err
	}
	var p Plan
	if err := json.Unmarshal(out, &p); err != nil {
		return Plan{}, &Error{Kind: ErrInvalid, Op: "plan", Err: err}
	}
	if err := checkPlan(p); err != nil {
		return Plan{}, err
	}
	if prev != nil {
		if err := w.Write(path.Join(TaskDir(taskID), "plans", "plan_v"+strconv.Itoa(old.Version)+".json"), prev); err != nil {
			return Plan{}, err
		}
	}
	if err := w.Write(name, out); err != nil {
		return Plan{}, err
	}
	return p, nil
}

// checkPlan refuses plans the state machine cannot run: duplicate or bad
// subtask ids, unknown dependencies, checkpoints naming unknown subtasks.
func checkPlan(p Plan) error {
	ids := map[string]bool{}
	for _, s := range p.Subtasks {
		if err := ValidateID("subtask id", s.ID); err != nil {
			return err
		}
		if ids[s.ID] {
			return invalidf("plan", "give every subtask its own id", "subtask %s appears twice", s.ID)
		}
		ids[s.ID] = true
	}
	for _, s := range p.Subtasks {
		for _, d := range s.Dependencies {
			if !ids[d] {
				return invalidf("plan", "dependencies must name subtasks of the same plan", "subtask %s depends on unknown %s", s.ID, d)
			}
		}
	}
	for _, c := range p.Checkpoints {
		for _, s := range c.Subtasks {
			if !ids[s] {
				return invalidf("plan", "", "checkpoint %s names unknown subtask %s", c.ID, s)
			}
		}
	}
	return nil
}

// ReadPlan reads the current plan.json, or plans/plan_v<version>.json when
// version > 0 and is not the current one.
func (w *Workspace) ReadPlan(taskID string, version int) (*Plan, error) {
	if err := w.checkTask(taskID); err != nil {
		return nil, err
	}
	var p Plan
	err := w.readJSON(path.Join(TaskDir(taskID), "plan.json"), &p)
	if err == nil && (version == 0 || p.Version == version) {
		return &p, nil
	}
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	if version == 0 {
		return nil, notFoundf("plan of task "+taskID, "write the plan first", "no plan.json")
	}
	var old Plan
	if err := w.readJSON(path.Join(TaskDir(taskID), "plans", "plan_v"+strconv.Itoa(version)+".json"), &old); err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil, notFoundf(fmt.Sprintf("plan v%d of task %s", version, taskID), "", "not kept")
		}
		return nil, err
	}
	return &old, nil
}

// WriteOutput writes outputs/<subtask>.json, filling subtask_id and
// worker_id. It does not finish the subtask: drop a done marker for that.
func (w *Workspace) WriteOutput(taskID, subtaskID, agent string, data []byte) (string, error) {
	if err := w.requireTask(taskID); err != nil {
		return "", err
	}
	if err := ValidateID("subtask id", subtaskID); err != nil {
		return "", err
	}
	if err := ValidateID("agent", agent); err != nil {
		return "", err
	}
	m, err := w.parseDoc("output", data)
	if err != nil {
		return "", err
	}
	m["subtask_id"] = subtaskID
	if _, ok := m["worker_id"]; !ok {
		m["worker_id"] = agent
	}
	if _, ok := m["completed_at"]; !ok {
		m["completed_at"] = w.Now().Format(TimeFormat)
	}
	rel := path.Join("outputs", subtaskID+".json")
	_, err = w.writeDoc(schemas.KindOutput, path.Join(TaskDir(taskID), rel), m)
	return rel, err
}

// WriteReview writes reviews/<id>.json, filling id, reviewer and
// reviewed_at when missing.
func (w *Workspace) WriteReview(taskID, reviewID, agent string, data []byte) (string, error) {
	if err := w.requireTask(taskID); err != nil {
		return "", err
	}
	if err := ValidateID("review id", reviewID); err != nil {
		return "", err
	}
	m, err := w.parseDoc("review", data)
	if err != nil {
		return "", err
	}
	m["id"] = reviewID
	if agent != "" {
		if err := ValidateID("agent", agent); err != nil {
			return "", err
		}
		if _, ok := m["reviewer"]; !ok {
			m["reviewer"] = agent
		}
	}
	if _, ok := m["reviewed_at"]; !ok {
		m["reviewed_at"] = w.Now().Format(TimeFormat)
	}
	rel := path.Join("reviews", reviewID+".json")
	_, err = w.writeDoc(schemas.KindReview, path.Join(TaskDir(taskID), rel), m)
	return rel, err
}
