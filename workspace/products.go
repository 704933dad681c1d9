package workspace

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/workspaced/workspaced/schemas"
)

// Agent-written products (plans, outputs, reviews) are kept with every
// field the agent wrote: they are decoded into a generic map (numbers kept
// exact) and re-encoded canonically, keys sorted.

func (w *Workspace) parseDoc(what string, data []byte) (map[string]any, error) {
	return parseDoc(what, data, w.settings.Limits)
}

// parseDoc decodes an agent's document as a generic object within the
// limits.
func parseDoc(what string, data []byte, limits LimitSettings) (map[string]any, error) {
	if len(data) > limits.ValueMaxBytes*16 {
		return nil, invalidf(what, "", "document is %d bytes, over the limit", len(data))
	}
	if !utf8.Valid(data) {
		// The decoder would put U+FFFD in its place: the product kept
		// would not be the one written.
		return nil, invalidf("parse "+what, "the file must hold UTF-8 JSON text", "not valid UTF-8")
	}
	if err := CheckDepth(data, limits.MaxDepth); err != nil {
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
	var old Plan
	prev, err := w.ReadFile(name)
	switch {
	case err == nil:
		if err := decodeStrict(name, prev, w.settings.Limits.MaxDepth, &old); err != nil {
			return Plan{}, fmt.Errorf("read current plan: %w", err)
		}
	case !errors.Is(err, ErrNotFound):
		return Plan{}, fmt.Errorf("read current plan: %w", err)
	}
	out, p, err := BuildPlan(taskID, agent, m, old.Version+1, w.Now())
	if err != nil {
		return Plan{}, err
	}
	if prev != nil {
		// plans/plan_v<N>.json is written once: a plan.json that claims a
		// version already kept with other content (written there by
		// hand) must not replace it.
		keep := path.Join(TaskDir(taskID), "plans", "plan_v"+strconv.Itoa(old.Version)+".json")
		kept, err := w.ReadFile(keep)
		switch {
		case errors.Is(err, ErrNotFound):
			if err := w.Write(keep, prev); err != nil {
				return Plan{}, err
			}
		case err != nil:
			return Plan{}, fmt.Errorf("keep plan v%d: %w", old.Version, err)
		case string(kept) != string(prev):
			return Plan{}, &Error{Kind: ErrConflict, Op: "write plan of task " + taskID,
				Msg:  fmt.Sprintf("plan.json says version %d, but plans/plan_v%d.json already keeps another version %d", old.Version, old.Version, old.Version),
				Hint: "plan.json was changed without a new version; give it the next free version, or move it away, then write again"}
		}
	}
	if err := w.Write(name, out); err != nil {
		return Plan{}, err
	}
	return p, nil
}

// BuildPlan makes m, a plan an agent wrote for task taskID, version
// version of the plan: it fills version, task_id and (when missing) id,
// created_at (now) and created_by (agent), and checks the result against
// the schema and the state machine's rules. It returns the plan's bytes as
// kept and the plan. Every backend writes plans with it.
func BuildPlan(taskID, agent string, m map[string]any, version int, now time.Time) ([]byte, Plan, error) {
	if err := agree("write plan of task "+taskID, m, "task_id", taskID, "the task it is written for"); err != nil {
		return nil, Plan{}, err
	}
	m["version"] = version
	m["task_id"] = taskID
	if _, ok := m["id"]; !ok {
		m["id"] = "plan_" + taskID
	}
	if _, ok := m["created_at"]; !ok {
		m["created_at"] = now.Format(TimeFormat)
	}
	if _, ok := m["created_by"]; !ok {
		m["created_by"] = agent
	}
	if id, _ := m["id"].(string); ValidateID("plan id", id) != nil {
		return nil, Plan{}, ValidateID("plan id", id)
	}
	out, err := marshalValidated(schemas.KindPlan, m)
	if err != nil {
		return nil, Plan{}, err
	}
	var p Plan
	if err := json.Unmarshal(out, &p); err != nil {
		return nil, Plan{}, &Error{Kind: ErrInvalid, Op: "plan", Err: err}
	}
	if err := checkPlan(p); err != nil {
		return nil, Plan{}, err
	}
	return out, p, nil
}

// ParseDoc decodes an agent's document (a plan, output or review) as a
// generic object, numbers kept exact, within the limits.
func ParseDoc(what string, data []byte, limits LimitSettings) (map[string]any, error) {
	return parseDoc(what, data, limits)
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
func (w *Workspace) ReadPlan(ctx context.Context, taskID string, version int) (*Plan, error) {
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
func (w *Workspace) WriteOutput(ctx context.Context, taskID, subtaskID, agent string, data []byte) (string, error) {
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
	rel, out, err := BuildOutput(subtaskID, agent, m, w.Now())
	if err != nil {
		return "", err
	}
	l, err := w.lockTaskForProduct(ctx, taskID, agent)
	if err != nil {
		return "", err
	}
	defer l.Release()
	if err := w.checkOutputOpen(ctx, taskID, subtaskID, rel); err != nil {
		return "", err
	}
	if _, err := w.replaceProduct(taskID, "outputs", subtaskID, out); err != nil {
		return "", err
	}
	return rel, nil
}

// agree refuses a document whose field names something other than want
// (what the caller says the document is), naming both. A missing field
// agrees.
// whose says what want is ("the subtask it is written for"). A missing
// field, or an empty string (what a Go struct without omitempty writes),
// agrees.
func agree(op string, m map[string]any, field, want, whose string) error {
	v, ok := m[field]
	if !ok {
		return nil
	}
	if s, isString := v.(string); isString && (s == want || s == "") {
		return nil
	}
	got, _ := json.Marshal(v)
	return &Error{Kind: ErrInvalid, Op: op, Msg: fmt.Sprintf("the document says %s %s, but %s is %q", field, got, whose, want),
		Hint: fmt.Sprintf("leave %s out of the document, or make it %q", field, want)}
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
func (w *Workspace) WriteReview(ctx context.Context, taskID, reviewID, agent string, data []byte) (string, error) {
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
	rel, out, err := BuildReview(reviewID, agent, m, w.Now())
	if err != nil {
		return "", err
	}
	l, err := w.lockTaskForProduct(ctx, taskID, agent)
	if err != nil {
		return "", err
	}
	defer l.Release()
	if err := w.checkReviewOpen(taskID, rel); err != nil {
		return "", err
	}
	if _, err := w.replaceProduct(taskID, "reviews", reviewID, out); err != nil {
		return "", err
	}
	return rel, nil
}

// BuildOutput makes m, an output agent wrote for subtask subtaskID, the
// document kept as outputs/<subtask>.json: it fills subtask_id, worker_id
// and (when missing) completed_at, refuses a document naming another
// subtask or agent, and checks the schema. It returns the output's name
// and bytes. Every backend writes outputs with it.
func BuildOutput(subtaskID, agent string, m map[string]any, now time.Time) (string, []byte, error) {
	rel := path.Join("outputs", subtaskID+".json")
	op := "write output " + rel
	if err := agree(op, m, "subtask_id", subtaskID, "the subtask it is written for"); err != nil {
		return "", nil, err
	}
	if err := agree(op, m, "worker_id", agent, "the agent writing it"); err != nil {
		return "", nil, err
	}
	m["subtask_id"] = subtaskID
	m["worker_id"] = agent
	if _, ok := m["completed_at"]; !ok {
		m["completed_at"] = now.Format(TimeFormat)
	}
	out, err := marshalValidated(schemas.KindOutput, m)
	return rel, out, err
}

// BuildReview makes m, a review agent (may be "") wrote as reviewID, the
// document kept as reviews/<id>.json: it fills id, reviewer and (when
// missing) reviewed_at, refuses a document saying otherwise, and checks
// the schema. Every backend writes reviews with it.
func BuildReview(reviewID, agent string, m map[string]any, now time.Time) (string, []byte, error) {
	rel := path.Join("reviews", reviewID+".json")
	op := "write review " + rel
	if err := agree(op, m, "id", reviewID, "the review id it is written as"); err != nil {
		return "", nil, err
	}
	m["id"] = reviewID
	if agent != "" {
		if err := ValidateID("agent", agent); err != nil {
			return "", nil, err
		}
		if err := agree(op, m, "reviewer", agent, "the agent writing it"); err != nil {
			return "", nil, err
		}
		m["reviewer"] = agent
	}
	if _, ok := m["reviewed_at"]; !ok {
		m["reviewed_at"] = now.Format(TimeFormat)
	}
	out, err := marshalValidated(schemas.KindReview, m)
	return rel, out, err
}
