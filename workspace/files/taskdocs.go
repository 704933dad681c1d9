package files

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

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files/agentfile"
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
func (w *Store) ReadTaskDoc(ctx context.Context, taskID, rel string) (json.RawMessage, error) {
	if err := w.requireTask(taskID); err != nil {
		return nil, err
	}
	p, err := taskDocKind(rel)
	if err != nil {
		return nil, err
	}
	dir, err := w.root.Open(workspace.TaskDir(taskID))
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
		return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "read " + rel, Err: err}
	}
	return b.Bytes(), nil
}

// taskDocKind says which product rel names, accepting the kept plan
// versions besides what a done marker may name.
func taskDocKind(rel string) (workspace.Product, error) {
	if v, ok := strings.CutPrefix(rel, "plans/plan_v"); ok {
		v, ok = strings.CutSuffix(v, ".json")
		if n, err := strconv.Atoi(v); ok && err == nil && n > 0 && strconv.Itoa(n) == v {
			return workspace.Product{Kind: workspace.ProductPlan}, nil
		}
	}
	p, err := workspace.ClassifyProduct(rel)
	if err == nil && p.Kind == workspace.ProductNone {
		err = workspace.Invalidf("read", "", "no document named")
	}
	return p, err
}

// ListReviews reads every review of task taskID (reviews/<id>.json), each
// as ReadTaskDoc would, sorted by reviewed_at and then id. A file that
// cannot be read or does not validate is passed over and named in the
// second result with the reason; so is a name that is no review's. A task
// without reviews gives an empty list. A reviews/ that is not a directory
// (a symlink to another task's, say) is ErrUnsafe.
func (w *Store) ListReviews(ctx context.Context, taskID string) ([]workspace.Review, []workspace.Skipped, error) {
	if err := w.requireTask(taskID); err != nil {
		return nil, nil, err
	}
	dir, err := w.root.Open(workspace.TaskDir(taskID))
	if err != nil {
		return nil, nil, fmt.Errorf("open task %s: %w", taskID, err)
	}
	defer dir.Close()
	rd, err := agentfile.OpenDirAt(dir, "reviews")
	switch {
	case errors.Is(err, workspace.ErrNotFound):
		return []workspace.Review{}, nil, nil
	case errors.Is(err, workspace.ErrUnsafe):
		return nil, nil, &workspace.Error{Kind: workspace.ErrUnsafe, Op: "list reviews of task " + taskID, Msg: "reviews/ is not a directory of the task"}
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
	reviews := []workspace.Review{}
	var skipped []workspace.Skipped
	for _, n := range names {
		if strings.HasPrefix(n, ".") {
			continue // temporary files, locks
		}
		rel := path.Join("reviews", n)
		p, err := workspace.ClassifyProduct(rel)
		if err == nil {
			p, _, err = w.readProductAt(dir, rel, p)
		}
		if err != nil {
			skipped = append(skipped, workspace.Skipped{File: rel, Reason: err.Error()})
			continue
		}
		reviews = append(reviews, *p.Review)
	}
	workspace.SortReviews(reviews)
	return reviews, skipped, nil
}
