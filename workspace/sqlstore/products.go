package sqlstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// What agents write in a task (plans and their versions, outputs and
// reviews with their history) is a row of products under its path in
// the task; these functions decide what a store reads and writes there.

// Body reads the product rel of one task; had is false when there is
// none.
type Body func(rel string) (body string, had bool, err error)

// Put writes the product rel of one task, created or replaced.
type Put func(rel string, data []byte) error

// PathBody is one row of a query selecting path, body.
type PathBody struct{ Path, Body string }

// WritePlan writes m as the next version of plan.json through get and
// put, in the caller's transaction: the current plan is kept as
// plans/plan_v<N>.json, and a kept version that differs from it is
// ErrConflict.
func WritePlan(taskID, agent string, m map[string]any, now time.Time, get Body, put Put) (workspace.Plan, error) {
	prev, had, err := get("plan.json")
	if err != nil {
		return workspace.Plan{}, fmt.Errorf("read current plan: %w", err)
	}
	var old workspace.Plan
	if had {
		if err := json.Unmarshal([]byte(prev), &old); err != nil {
			return workspace.Plan{}, fmt.Errorf("read current plan: %w", err)
		}
	}
	out, plan, err := workspace.BuildPlan(taskID, agent, m, old.Version+1, now)
	if err != nil {
		return workspace.Plan{}, err
	}
	if had {
		if err := keepPlan(taskID, old.Version, prev, get, put); err != nil {
			return workspace.Plan{}, err
		}
	}
	return plan, put("plan.json", out)
}

// keepPlan keeps prev, the plan of the given version, as
// plans/plan_v<version>.json, unless it is kept there already.
func keepPlan(taskID string, version int, prev string, get Body, put Put) error {
	keep := "plans/plan_v" + strconv.Itoa(version) + ".json"
	kept, there, err := get(keep)
	switch {
	case err != nil:
		return fmt.Errorf("keep plan v%d: %w", version, err)
	case !there:
		return put(keep, []byte(prev))
	case kept != prev:
		return &workspace.Error{Kind: workspace.ErrConflict, Op: "write plan of task " + taskID,
			Msg:  fmt.Sprintf("plan.json says version %d, but plans/plan_v%d.json already keeps another version %d", version, version, version),
			Hint: "plan.json was changed without a new version; give it the next free version, then write again"}
	}
	return nil
}

// ReadPlan reads the current plan through get (version 0 or its own) or
// a kept one.
func ReadPlan(taskID string, version int, get Body) (*workspace.Plan, error) {
	var p workspace.Plan
	cur, had, err := get("plan.json")
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
	old, had, err := get("plans/plan_v" + strconv.Itoa(version) + ".json")
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

// DecodeDoc judges the product rel of a task, read as b (had false when
// there is none), as the daemon would (workspace.DecodeProduct).
func DecodeDoc(rel, b string, had bool, lim workspace.LimitSettings) (workspace.Product, []byte, error) {
	if !had {
		return workspace.Product{}, nil, &workspace.Error{Kind: workspace.ErrNotFound, Op: "product " + rel,
			Msg: fmt.Sprintf("output file %s does not exist", rel), Hint: "write the product before dropping the marker"}
	}
	// A kept plan version is judged as the plan it was.
	as := rel
	if strings.HasPrefix(rel, "plans/") {
		as = "plan.json"
	}
	p, err := workspace.DecodeProduct(as, []byte(b), lim)
	return p, []byte(b), err
}

// ReadDoc reads the product rel of a task and judges it (DecodeDoc).
type ReadDoc func(rel string) (workspace.Product, []byte, error)

// ReadTaskDoc reads the document name of a task through read: plan.json,
// a kept plan, an output or a review, checked as a product, compacted.
// Any other name is ErrInvalid.
func ReadTaskDoc(name string, read ReadDoc) (json.RawMessage, error) {
	if !taskDocName(name) {
		return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "read " + name,
			Msg: "not a document of a task: plan.json, plans/plan_v<N>.json, outputs/<id>.json or reviews/<id>.json"}
	}
	_, data, err := read(name)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := json.Compact(&b, data); err != nil {
		return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "read " + name, Err: err}
	}
	return b.Bytes(), nil
}

func taskDocName(name string) bool {
	if v, ok := strings.CutPrefix(name, "plans/plan_v"); ok {
		v, ok = strings.CutSuffix(v, ".json")
		n, err := strconv.Atoi(v)
		return ok && err == nil && n > 0 && strconv.Itoa(n) == v
	}
	kind, _, err := workspace.ClassifyOutput(name)
	return err == nil && kind != workspace.ProductNone
}

// ReadProduct reads through read and judges what a done marker's
// output_file names; a cancel's "none" reads nothing.
func ReadProduct(outputFile string, read ReadDoc) (workspace.Product, error) {
	kind, _, err := workspace.ClassifyOutput(outputFile)
	if err != nil {
		return workspace.Product{}, &workspace.Error{Kind: workspace.ErrInvalid, Op: "product", Err: err}
	}
	if kind == workspace.ProductNone {
		return workspace.Product{Kind: kind}, nil
	}
	p, _, err := read(outputFile)
	return p, err
}

// Reviews decodes the reviews among rows, sorted by reviewed_at then id;
// a row that does not validate as a review is named in the second list.
func Reviews(rows []PathBody, lim workspace.LimitSettings) ([]workspace.Review, []workspace.Skipped) {
	reviews := []workspace.Review{}
	var skipped []workspace.Skipped
	for _, r := range rows {
		p, err := workspace.DecodeProduct(r.Path, []byte(r.Body), lim)
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
	return reviews, skipped
}

// TaskFileName checks a name a thread's buffer gives for a document
// inside a task and cleans it; a name outside the task is ErrInvalid.
func TaskFileName(name string) (string, error) {
	if name == "" || strings.HasPrefix(name, "/") || strings.HasPrefix(name, `\`) {
		return "", &workspace.Error{Kind: workspace.ErrInvalid, Op: "read " + name, Msg: "an absolute path", Hint: "name a file inside the task directory"}
	}
	clean := path.Clean(name)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", &workspace.Error{Kind: workspace.ErrInvalid, Op: "read " + name, Msg: "names a file outside the task directory", Hint: "name a file inside the task directory"}
	}
	return clean, nil
}

// ThreadFile is the thread id of a clean task file name that names a
// thread's document, threads/<id>.json.
func ThreadFile(clean string) (id string, ok bool) {
	if id, ok := strings.CutPrefix(clean, "threads/"); ok && strings.HasSuffix(id, ".json") {
		return strings.TrimSuffix(id, ".json"), true
	}
	return "", false
}

// TaskFile is what a read of the task file name finds: data, or
// ErrNotFound when missing, or ErrUnsafe when over max bytes (max < 0:
// no limit).
func TaskFile(taskID, name, data string, missing bool, max int64) ([]byte, error) {
	if missing {
		return nil, &workspace.Error{Kind: workspace.ErrNotFound, Op: "read " + name, Msg: "no such file in task " + taskID}
	}
	if max >= 0 && int64(len(data)) > max {
		return nil, &workspace.Error{Kind: workspace.ErrUnsafe, Op: "read " + name, Msg: fmt.Sprintf("%d bytes, more than the limit of %d", len(data), max)}
	}
	return []byte(data), nil
}

// Replace writes data as the product dir/id.json of a task through get
// and put, in the caller's transaction, keeping what it replaces as the
// next version of the history; kept lists the paths below
// dir/history/.
func Replace(dir, id string, data []byte, get Body, kept func(prefix string) ([]string, error), put Put) error {
	rel := path.Join(dir, id+".json")
	prev, had, err := get(rel)
	if err != nil {
		return err
	}
	if had && prev == string(data) {
		return nil
	}
	if had {
		names, err := kept(path.Join(dir, workspace.HistoryDir) + "/")
		if err != nil {
			return err
		}
		top := 0
		for _, n := range names {
			if pid, v, ok := workspace.HistoryVersion(path.Base(n)); ok && pid == id {
				top = max(top, v)
			}
		}
		if err := put(workspace.HistoryName(dir, id, top+1), []byte(prev)); err != nil {
			return fmt.Errorf("keep the replaced %s: %w", rel, err)
		}
	}
	return put(rel, data)
}

// BuildOutput checks an output's ids and document and builds it
// (workspace.BuildOutput): its path in the task and its bytes.
func BuildOutput(subtaskID, agent string, data []byte, lim workspace.LimitSettings, now time.Time) (string, []byte, error) {
	m, err := checkDoc("output", data, lim, "subtask id", subtaskID, "agent", agent)
	if err != nil {
		return "", nil, err
	}
	return workspace.BuildOutput(subtaskID, agent, m, now)
}

// BuildReview checks a review's id and document and builds it
// (workspace.BuildReview): its path in the task and its bytes.
func BuildReview(reviewID, agent string, data []byte, lim workspace.LimitSettings, now time.Time) (string, []byte, error) {
	m, err := checkDoc("review", data, lim, "review id", reviewID)
	if err != nil {
		return "", nil, err
	}
	return workspace.BuildReview(reviewID, agent, m, now)
}

// checkDoc checks ids, pairs of what an id is and the id, in order, then
// parses data as a document of kind.
func checkDoc(kind string, data []byte, lim workspace.LimitSettings, ids ...string) (map[string]any, error) {
	for i := 0; i+1 < len(ids); i += 2 {
		if err := workspace.ValidateID(ids[i], ids[i+1]); err != nil {
			return nil, err
		}
	}
	return workspace.ParseDoc(kind, data, lim)
}

// OutputFinal is workspace.OutputFinal over the task's state as its row
// holds it (had false when the task has none yet).
func OutputFinal(taskID, subtaskID, rel, doc string, had bool, waiting []workspace.WaitingDone) error {
	var state *workspace.State
	if had {
		st, err := DecodeState(taskID, doc)
		if err != nil {
			return fmt.Errorf("write output %s: read the state to see whether it is final: %w", rel, err)
		}
		state = &st
	}
	return workspace.OutputFinal(subtaskID, rel, state, waiting)
}

// WaitingDone adds a done marker row (its file name and body) to out,
// unless its body does not parse.
func WaitingDone(out []workspace.WaitingDone, name, body string) []workspace.WaitingDone {
	var m workspace.Marker
	if json.Unmarshal([]byte(body), &m) == nil {
		out = append(out, workspace.WaitingDone{Name: name, Marker: m})
	}
	return out
}
