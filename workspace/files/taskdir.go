package files

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/workspaced/workspaced/vocab"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files/agentfile"
)

// A task's directory must be a real directory: tasks/alias → v1 is never
// followed. os.Root resolves a symlink that stays inside the root, so
// without this check every access through tasks/alias/… would read and
// write v1's files under another id — markers the daemon takes for v1,
// events appended to v1's log, v1's lock taken as alias's.

// IsTaskDir reports whether tasks/<id> is a real directory: id is a valid
// task id and the entry exists and is a directory, not a symlink to one.
// It costs one lstat(2) and reads nothing, so the daemon can call it for
// every id an event names. A directory being created (no task.json yet)
// is a task directory.
func (w *Store) IsTaskDir(id string) bool {
	if workspace.ValidateID("task id", id) != nil {
		return false
	}
	fi, err := w.root.Lstat(workspace.TaskDir(id))
	return err == nil && fi.IsDir()
}

// checkTask validates a task id and refuses a tasks/<id> that is a
// symlink or anything else but a directory (ErrUnsafe, naming what it
// is). A missing tasks/<id> passes: the caller says "no such task" in its
// own words.
func (w *Store) checkTask(id string) error {
	if err := workspace.ValidateID("task id", id); err != nil {
		return err
	}
	fi, err := w.root.Lstat(workspace.TaskDir(id))
	if err != nil {
		if isNotExist(err) {
			return nil
		}
		return fmt.Errorf("task %s: %w", id, err)
	}
	if fi.IsDir() {
		return nil
	}
	return &workspace.Error{Kind: workspace.ErrUnsafe, Op: "task " + id, Msg: workspace.TaskDir(id) + " " + w.notTaskDir(workspace.TaskDir(id), fi.Mode()),
		Hint: "name the task by its own id (the directory under tasks/), or remove the entry"}
}

// notTaskDir says why the entry name of tasks/, of mode m, is not a task
// directory ("is a symlink …").
func (w *Store) notTaskDir(name string, m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		to := ""
		if target, err := w.root.Readlink(name); err == nil {
			to = " (to " + strconv.Quote(target) + ")"
		}
		return "is a symlink" + to + ": a task directory must be a real directory; a link to one is never followed"
	case m.IsRegular():
		return "is a regular file, not a task directory"
	}
	return "is a " + workspace.FileKind(m) + ", not a task directory"
}

// TaskIDs lists the task directories under tasks/, sorted: the entries
// that are real directories named by a valid task id (see IsTaskDir),
// whether or not they hold a task.json yet. Dot entries (the temporary
// directories of writers and of cleanup) are passed over; anything else
// that is not a task directory — a symlink, a file, an invalid name — is
// skipped too, and TaskIDsReport says which.
func (w *Store) TaskIDs(ctx context.Context) ([]string, error) {
	return w.taskIDs(nil)
}

// TaskIDsReport is TaskIDs plus the entries of tasks/ it skipped (dot
// entries aside) and why.
func (w *Store) TaskIDsReport() ([]string, []workspace.Skipped, error) {
	var skipped []workspace.Skipped
	ids, err := w.taskIDs(func(s workspace.Skipped) { skipped = append(skipped, s) })
	return ids, skipped, err
}

// taskIDs lists tasks/, calling skip (when not nil) for every entry that
// is neither a task directory nor a dot entry.
func (w *Store) taskIDs(skip func(workspace.Skipped)) ([]string, error) {
	f, err := w.root.Open("tasks")
	if err != nil {
		if isNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	defer f.Close()
	var ids []string
	for {
		ents, err := f.ReadDir(1024)
		for _, de := range ents {
			n := de.Name()
			if strings.HasPrefix(n, ".") {
				continue
			}
			verr := workspace.ValidateID("task id", n)
			if de.IsDir() && verr == nil {
				ids = append(ids, n)
				continue
			}
			if skip == nil {
				continue
			}
			file := workspace.TaskDir(n)
			switch {
			case !utf8.ValidString(n):
				skip(workspace.Skipped{File: file, Reason: "its name is not UTF-8, so it is not a task id"})
			case verr != nil:
				skip(workspace.Skipped{File: file, Reason: "its name is not a valid task id: " + vocab.IDRule})
			default:
				skip(workspace.Skipped{File: file, Reason: w.notTaskDir(file, de.Type())})
			}
		}
		if err == io.EOF || len(ents) == 0 {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	sort.Strings(ids)
	return ids, nil
}

// ReadTaskAt reads task id's task.json through tasks, the open tasks/
// directory, for a caller that reads every task (task list): a task
// directory and task.json are each opened with one openat(2), never
// following a symlink, where GetTask walks the path from the root. The
// checks are GetTask's: a real directory, a regular file within the size
// limit, strict JSON; a missing task.json is ErrNotFound.
func (w *Store) ReadTaskAt(tasks *os.File, id string) (workspace.Task, error) {
	if err := workspace.ValidateID("task id", id); err != nil {
		return workspace.Task{}, err
	}
	d, err := agentfile.OpenDirAt(tasks, id)
	if err != nil {
		return workspace.Task{}, err
	}
	defer d.Close()
	return w.ReadTaskIn(d, id)
}

// ReadTaskIn reads task id's task.json through dir, the task's open
// directory (OpenDirAt of tasks/), with ReadTaskAt's checks, for a caller
// that reads more of the same task through that one handle.
func (w *Store) ReadTaskIn(dir *os.File, id string) (workspace.Task, error) {
	name := path.Join(workspace.TaskDir(id), "task.json")
	data, err := agentfile.ReadAt(dir, "task.json", int64(w.settings.Limits.MaxFileBytes))
	if err != nil {
		return workspace.Task{}, err
	}
	var t workspace.Task
	if err := workspace.DecodeStrict(name, data, w.settings.Limits.MaxDepth, &t); err != nil {
		return workspace.Task{}, err
	}
	return t, nil
}
