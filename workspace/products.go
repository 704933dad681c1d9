package workspace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"time"
	"unicode/utf8"

	"github.com/workspaced/workspaced/schemas"
)

// Agent-written products (plans, outputs, reviews) are kept with every
// field the agent wrote: they are decoded into a generic map (numbers kept
// exact) and re-encoded canonically, keys sorted.

// parseDoc decodes an agent's document as a generic object within the
// limits.
func parseDoc(what string, data []byte, limits LimitSettings) (map[string]any, error) {
	if len(data) > limits.ValueMaxBytes*16 {
		return nil, Invalidf(what, "", "document is %d bytes, over the limit", len(data))
	}
	if !utf8.Valid(data) {
		// The decoder would put U+FFFD in its place: the product kept
		// would not be the one written.
		return nil, Invalidf("parse "+what, "the file must hold UTF-8 JSON text", "not valid UTF-8")
	}
	if err := CheckDepth(data, limits.MaxDepth); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, &Error{Kind: ErrInvalid, Op: "parse " + what, Err: DescribeJSONError(data, err), Hint: "the file must hold one JSON object"}
	}
	if dec.More() {
		return nil, Invalidf("parse "+what, "", "trailing data after the JSON object")
	}
	if m == nil {
		return nil, Invalidf("parse "+what, "the file must hold one JSON object", "got null")
	}
	return m, nil
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
			return Invalidf("plan", "give every subtask its own id", "subtask %s appears twice", s.ID)
		}
		ids[s.ID] = true
	}
	for _, s := range p.Subtasks {
		for _, d := range s.Dependencies {
			if !ids[d] {
				return Invalidf("plan", "dependencies must name subtasks of the same plan", "subtask %s depends on unknown %s", s.ID, d)
			}
		}
	}
	for _, c := range p.Checkpoints {
		for _, s := range c.Subtasks {
			if !ids[s] {
				return Invalidf("plan", "", "checkpoint %s names unknown subtask %s", c.ID, s)
			}
		}
	}
	return nil
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

// SortReviews puts reviews in the order every store lists them: by
// reviewed_at (a review without one first), then by id.
func SortReviews(reviews []Review) {
	sort.SliceStable(reviews, func(i, j int) bool {
		a, b := reviews[i].ReviewedAt, reviews[j].ReviewedAt
		switch {
		case a == nil || b == nil:
			return a == nil && b != nil
		case !a.Equal(*b):
			return a.Before(*b)
		}
		return reviews[i].ID < reviews[j].ID
	})
}
