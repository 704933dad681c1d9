package workspace

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Reading what agents wrote in a task directory, for agents: the plan,
// its earlier versions, outputs and reviews, each as the document its
// writer wrote (every field kept), read with the daemon's safety rules.

// ReadTaskDoc reads one JSON document of task taskID, named relative to
// the task directory: "plan.json", "plans/plan_v<N>.json",
// "outputs/<subtask>.json" or "reviews/<review>.json". The file and its
// directory are opened without following a symlink; a FIFO, a device, a
// file over the size limit or nested too deep is ErrUnsafe. The document
// must match its schema (and a plan must be runnable, an output must name
// its own subtask), as the daemon requires of a product: anything else is
// ErrInvalid. A missing file is ErrNotFound. It returns the document
// compacted, numbers and unknown fields as written.
func (w *Workspace) ReadTaskDoc(ctx context.Context, taskID, rel string) (json.RawMessage, error) {
	if err := w.requireTask(taskID); err != nil {
		return nil, err
	}
	p, err := taskDocKind(rel)
	if err != nil {
		return nil, err
	}
	dir, err := w.root.Open(TaskDir(taskID))
	if err != nil {
		return nil, fmt.Errorf("open task %s: %w", taskID, err)
	}
	defer dir.Close()
	_, data, err := w.readProductAt(dir, rel, p)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := json.Compact(&b, data); err != nil {
		return nil, &Error{Kind: ErrInvalid, Op: "read " + rel, Err: err}
	}
	return b.Bytes(), nil
}

// taskDocKind says which product rel names, accepting the kept plan
// versions besides what a done marker may name.
func taskDocKind(rel string) (Product, error) {
	if v, ok := strings.CutPrefix(rel, "plans/plan_v"); ok {
		v, ok = strings.CutSuffix(v, ".json")
		if n, err := strconv.Atoi(v); ok && err == nil && n > 0 && strconv.Itoa(n) == v {
			return Product{Kind: ProductPlan}, nil
		}
	}
	p, err := classifyProduct(rel)
	if err == nil && p.Kind == ProductNone {
		err = invalidf("read", "", "no document named")
	}
	return p, err
}

// ListReviews reads every review of task taskID (reviews/<id>.json), each
// as ReadTaskDoc would, sorted by reviewed_at and then id. A file that
// cannot be read or does not validate is passed over and named in the
// second result with the reason; so is a name that is no review's. A task
// without reviews gives an empty list. A reviews/ that is not a directory
// (a symlink to another task's, say) is ErrUnsafe.
func (w *Workspace) ListReviews(ctx context.Context, taskID string) ([]Review, []Skipped, error) {
	if err := w.requireTask(taskID); err != nil {
		return nil, nil, err
	}
	dir, err := w.root.Open(TaskDir(taskID))
	if err != nil {
		return nil, nil, fmt.Errorf("open task %s: %w", taskID, err)
	}
	defer dir.Close()
	rd, err := OpenDirAt(dir, "reviews")
	switch {
	case errors.Is(err, ErrNotFound):
		return []Review{}, nil, nil
	case errors.Is(err, ErrUnsafe):
		return nil, nil, &Error{Kind: ErrUnsafe, Op: "list reviews of task " + taskID, Msg: "reviews/ is not a directory of the task"}
	case err != nil:
		return nil, nil, err
	}
	defer rd.Close()
	var names []string
	for {
		batch, err := rd.Readdirnames(512)
		names = append(names, batch...)
		if err == io.EOF || len(batch) == 0 {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("list reviews of task %s: %w", taskID, err)
		}
	}
	sort.Strings(names)
	reviews := []Review{}
	var skipped []Skipped
	for _, n := range names {
		if strings.HasPrefix(n, ".") {
			continue // temporary files, locks
		}
		rel := path.Join("reviews", n)
		p, err := classifyProduct(rel)
		if err == nil {
			p, _, err = w.readProductAt(dir, rel, p)
		}
		if err != nil {
			skipped = append(skipped, Skipped{File: rel, Reason: err.Error()})
			continue
		}
		reviews = append(reviews, *p.Review)
	}
	SortReviews(reviews)
	return reviews, skipped, nil
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
