package files

import (
	"context"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	"github.com/workspaced/workspaced/workspace"
)

// ThreadsReport reads every thread file of a task, sorted by creation time
// then id. A file that does not read is returned as an Omission instead of
// failing the whole context. When ctx ends, it stops with its error.
func (w *Store) ThreadsReport(ctx context.Context, taskID string) ([]workspace.Thread, []workspace.Omission, error) {
	dir := path.Join(workspace.TaskDir(taskID), "threads")
	f, err := w.root.Open(dir)
	if err != nil {
		if isNotExist(err) {
			return nil, nil, nil
		}
		return nil, nil, fmt.Errorf("open %s: %w", dir, err)
	}
	defer f.Close()
	var ids []string
	for {
		ents, err := f.ReadDir(512)
		for _, de := range ents {
			n := de.Name()
			id, ok := strings.CutSuffix(n, ".json")
			if !ok || strings.HasPrefix(n, ".") || workspace.ValidateID("thread id", id) != nil {
				continue
			}
			ids = append(ids, id)
		}
		if err == io.EOF || len(ents) == 0 {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("read %s: %w", dir, err)
		}
	}
	sort.Strings(ids)
	var out []workspace.Thread
	var bad []workspace.Omission
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return nil, nil, fmt.Errorf("threads of task %s: %w", taskID, err)
		}
		t, err := w.GetThread(ctx, taskID, id)
		if err != nil {
			bad = append(bad, workspace.Omission{Item: "thread:" + id, Reason: "unreadable: " + err.Error()})
			continue
		}
		out = append(out, t)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, bad, nil
}
