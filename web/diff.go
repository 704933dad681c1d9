package web

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"

	"github.com/workspaced/workspaced/workspace"
)

// The comparisons the panel shows between two versions of a plan or of an
// output: what was added, removed and changed, field by field, rather
// than a line diff of pretty-printed JSON. They are pure functions of the
// two documents.

// Change is one field that differs between two versions. Field is a
// dotted path ("code.main.go"); From is absent when the field was added,
// To when it was removed.
type Change struct {
	Field string `json:"field"`
	From  any    `json:"from,omitempty"`
	To    any    `json:"to,omitempty"`
}

// ItemChange is one subtask or checkpoint present in both versions, with
// what changed in it.
type ItemChange struct {
	ID      string   `json:"id"`
	Changes []Change `json:"changes"`
}

// PlanDiff is GET /api/tasks/{id}/plans/diff: the plan's own fields that
// changed, then the subtasks and checkpoints added, removed and changed
// (each list by id), from version From to version To.
type PlanDiff struct {
	From               int                    `json:"from"`
	To                 int                    `json:"to"`
	Plan               []Change               `json:"plan"`
	Added              []workspace.Subtask    `json:"added"`
	Removed            []workspace.Subtask    `json:"removed"`
	Changed            []ItemChange           `json:"changed"`
	CheckpointsAdded   []workspace.Checkpoint `json:"checkpoints_added"`
	CheckpointsRemoved []workspace.Checkpoint `json:"checkpoints_removed"`
	CheckpointsChanged []ItemChange           `json:"checkpoints_changed"`
}

// Same reports whether the two versions differ in nothing the diff
// compares.
func (d PlanDiff) Same() bool {
	return len(d.Plan)+len(d.Added)+len(d.Removed)+len(d.Changed)+
		len(d.CheckpointsAdded)+len(d.CheckpointsRemoved)+len(d.CheckpointsChanged) == 0
}

// planBookkeeping are the fields of a plan that differ between any two
// versions and say nothing of the work: they are left out of PlanDiff.Plan.
var planBookkeeping = []string{"id", "task_id", "version", "created_at", "created_by", "status", "subtasks", "checkpoints"}

// DiffPlans compares plan a with plan b. Subtasks and checkpoints are
// matched by id; their order in the plan is not compared. Every list of
// the result is non-nil, sorted by id.
func DiffPlans(a, b *workspace.Plan) (PlanDiff, error) {
	d := PlanDiff{From: a.Version, To: b.Version}
	fa, err := fields(a)
	if err != nil {
		return d, err
	}
	fb, err := fields(b)
	if err != nil {
		return d, err
	}
	for _, k := range planBookkeeping {
		delete(fa, k)
		delete(fb, k)
	}
	d.Plan = diffMaps("", fa, fb, []Change{})
	sid := func(s workspace.Subtask) string { return s.ID }
	if d.Added, d.Removed, d.Changed, err = diffByID(a.Subtasks, b.Subtasks, sid); err != nil {
		return d, err
	}
	cid := func(c workspace.Checkpoint) string { return c.ID }
	d.CheckpointsAdded, d.CheckpointsRemoved, d.CheckpointsChanged, err = diffByID(a.Checkpoints, b.Checkpoints, cid)
	return d, err
}

// DiffDocs compares two JSON documents (two versions of an output),
// field by field: objects are walked to their leaves, a list or a value
// that differs is one change. A document that is not an object compares
// as a whole, under the field "".
func DiffDocs(a, b []byte) ([]Change, error) {
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		return nil, fmt.Errorf("read the first version: %w", err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		return nil, fmt.Errorf("read the second version: %w", err)
	}
	ma, okA := va.(map[string]any)
	mb, okB := vb.(map[string]any)
	if !okA || !okB {
		if reflect.DeepEqual(va, vb) {
			return []Change{}, nil
		}
		return []Change{{From: va, To: vb}}, nil
	}
	return diffMaps("", ma, mb, []Change{}), nil
}

// diffByID matches two lists by id: the items only in b were added, only
// in a removed, and those in both changed when a field differs.
func diffByID[T any](a, b []T, id func(T) string) (added, removed []T, changed []ItemChange, err error) {
	added, removed, changed = []T{}, []T{}, []ItemChange{}
	inA := map[string]T{}
	for _, x := range a {
		inA[id(x)] = x
	}
	inB := map[string]bool{}
	for _, y := range b {
		inB[id(y)] = true
		x, ok := inA[id(y)]
		if !ok {
			added = append(added, y)
			continue
		}
		fx, err := fields(x)
		if err != nil {
			return nil, nil, nil, err
		}
		fy, err := fields(y)
		if err != nil {
			return nil, nil, nil, err
		}
		if cs := diffMaps("", fx, fy, nil); len(cs) > 0 {
			changed = append(changed, ItemChange{ID: id(y), Changes: cs})
		}
	}
	for _, x := range a {
		if !inB[id(x)] {
			removed = append(removed, x)
		}
	}
	byID := func(p, q T) int { return cmpString(id(p), id(q)) }
	slices.SortFunc(added, byID)
	slices.SortFunc(removed, byID)
	slices.SortFunc(changed, func(p, q ItemChange) int { return cmpString(p.ID, q.ID) })
	return added, removed, changed, nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// fields is v as its JSON object: the names and values a reader of the
// file sees (fields left out by omitempty are absent, not zero).
func fields(v any) (map[string]any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	m := map[string]any{}
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	return m, nil
}

// diffMaps appends to out the changes from a to b under prefix, keys in
// order; nested objects are walked.
func diffMaps(prefix string, a, b map[string]any, out []Change) []Change {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		name := k
		if prefix != "" {
			name = prefix + "." + k
		}
		va, inA := a[k]
		vb, inB := b[k]
		ma, okA := va.(map[string]any)
		mb, okB := vb.(map[string]any)
		switch {
		case okA && okB:
			out = diffMaps(name, ma, mb, out)
		case !inA:
			out = append(out, Change{Field: name, To: vb})
		case !inB:
			out = append(out, Change{Field: name, From: va})
		case !reflect.DeepEqual(va, vb):
			out = append(out, Change{Field: name, From: va, To: vb})
		}
	}
	return out
}
