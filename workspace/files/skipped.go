package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/workspaced/workspaced/workspace"
)

// SkippedIn reports what the listings and the daemon pass over in dir, a
// directory of the tree (slash-separated, relative to the root): every
// entry of dir that a listing (task list, env and memory list, thread
// list) or the daemon would skip, refuse or fail on, with the reason —
// and dir itself when the whole directory is passed over (a task
// directory without task.json). Dot entries (temporary files, .locks/)
// are never reported, save names that look like markers but are not.
//
// The directories it knows are tasks/, tasks/<id>/ and its env/,
// sessions/, sessions/<thread>/, threads/, outputs/ and reviews/, and
// memory/global/, memory/agents/ and memory/agents/<agent>/; any other
// directory reports nothing. The result is sorted by file. It reads
// every file it judges (entries up to their value, threads and products
// whole) and changes nothing.
func (w *Store) SkippedIn(ctx context.Context, dir string) ([]workspace.Skipped, error) {
	segs := strings.Split(path.Clean(dir), "/")
	var out []workspace.Skipped
	var err error
	switch {
	case len(segs) == 1 && segs[0] == "tasks":
		_, out, err = w.TaskIDsReport()
	case len(segs) >= 2 && segs[0] == "tasks":
		if !w.IsTaskDir(segs[1]) {
			return nil, nil // reported as an entry of tasks/
		}
		out, err = w.skippedInTask(ctx, segs[1], segs[2:])
	case len(segs) == 2 && segs[0] == "memory" && segs[1] == "global":
		out, err = w.skippedEntries(ctx, workspace.Scope{Kind: workspace.ScopeGlobal})
	case len(segs) == 2 && segs[0] == "memory" && segs[1] == "agents":
		out, err = w.skippedNames(dir, "agent id", "a directory of one agent's memory", "no command reaches the entries in it")
	case len(segs) == 3 && segs[0] == "memory" && segs[1] == "agents" && workspace.ValidateID("agent", segs[2]) == nil:
		out, err = w.skippedEntries(ctx, workspace.Scope{Kind: workspace.ScopeAgent, Agent: segs[2]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].File < out[j].File })
	return out, err
}

// skippedInTask is SkippedIn for tasks/<id>/<rest...>.
func (w *Store) skippedInTask(ctx context.Context, id string, rest []string) ([]workspace.Skipped, error) {
	dir := workspace.TaskDir(id)
	switch {
	case len(rest) == 0:
		return w.skippedTaskDir(ctx, id)
	case !w.exists(path.Join(dir, "task.json")):
		return nil, nil // the task directory itself is reported
	case len(rest) == 1 && rest[0] == "env":
		return w.skippedEntries(ctx, workspace.Scope{Kind: workspace.ScopeThread, TaskID: id})
	case len(rest) == 1 && rest[0] == "sessions":
		return w.skippedNames(path.Join(dir, "sessions"), "thread id", "a directory of one thread's session entries", "no command reaches the entries in it")
	case len(rest) == 2 && rest[0] == "sessions" && workspace.ValidateID("thread id", rest[1]) == nil:
		return w.skippedEntries(ctx, workspace.Scope{Kind: workspace.ScopeSession, TaskID: id, ThreadID: rest[1]})
	case len(rest) == 1 && rest[0] == "threads":
		return w.skippedThreads(ctx, id)
	case len(rest) == 1 && (rest[0] == "outputs" || rest[0] == "reviews"):
		return w.skippedProducts(ctx, id, rest[0])
	}
	return nil, nil
}

// taskSubdirs are the directories of a task directory that readers list
// or open by name.
var taskSubdirs = []string{"backups", "env", "journal", "outputs", "plans", "reviews", "sessions", "threads"}

// skippedTaskDir reports a task directory passed over as a whole (no
// task.json), its directories that are not directories, names that look
// like markers but are not, and a plan.json the daemon would reject.
func (w *Store) skippedTaskDir(ctx context.Context, id string) ([]workspace.Skipped, error) {
	dir := workspace.TaskDir(id)
	names, err := w.readNames(dir)
	if err != nil {
		return nil, err
	}
	var out []workspace.Skipped
	has := map[string]bool{}
	for _, n := range names {
		has[n] = true
		if _, ok := workspace.IsMarkerName(n); !ok && (strings.HasPrefix(n, ".claim") || strings.HasPrefix(n, ".done")) {
			out = append(out, workspace.Skipped{File: path.Join(dir, n), Reason: "looks like a marker but is not named .claim.<agent>[.<suffix>] or .done.<agent>[.<suffix>]: the daemon never takes it"})
		}
	}
	if !has["task.json"] {
		reason := "holds no task.json, so it is no task: task list passes it over and the daemon takes no marker in it (a task being created, or what is left of one)"
		if len(names) == 1 && has[".locks"] {
			reason = "holds nothing but lock files (left by a lock taken on a task already removed): task list passes it over; cleanup removes it"
		}
		return append(out, workspace.Skipped{File: dir, Reason: reason}), nil
	}
	for _, sub := range taskSubdirs {
		if !has[sub] {
			continue
		}
		name := path.Join(dir, sub)
		fi, err := w.root.Lstat(name)
		if err != nil || fi.IsDir() {
			continue
		}
		out = append(out, workspace.Skipped{File: name, Reason: "is " + w.describe(name, fi.Mode()) + ", not a directory: a task's " + sub + "/ must be a real directory of the task"})
	}
	if has[workspace.EventsFile] {
		name := path.Join(dir, workspace.EventsFile)
		if fi, err := w.root.Lstat(name); err == nil && !fi.Mode().IsRegular() {
			out = append(out, workspace.Skipped{File: name, Reason: "is " + w.describe(name, fi.Mode()) + ", not a regular file: events reads no event from it"})
		}
	}
	if has["plan.json"] {
		if _, err := w.ReadProduct(ctx, id, "plan.json"); err != nil {
			out = append(out, workspace.Skipped{File: path.Join(dir, "plan.json"), Reason: "the daemon rejects it: " + errorText(err)})
		}
	}
	return out, nil
}

// skippedEntries reports the files of an entry directory that list skips.
func (w *Store) skippedEntries(ctx context.Context, s workspace.Scope) ([]workspace.Skipped, error) {
	_, skipped, err := w.ListEntriesReport(ctx, s)
	if errors.Is(err, workspace.ErrNotFound) {
		return nil, nil
	}
	return skipped, err
}

// skippedNames reports the entries of dir, a directory of directories
// named by ids (sessions/, memory/agents/), that are not such a directory.
func (w *Store) skippedNames(dir, idWhat, what, consequence string) ([]workspace.Skipped, error) {
	names, err := w.readNames(dir)
	if err != nil {
		return nil, err
	}
	var out []workspace.Skipped
	for _, n := range names {
		if strings.HasPrefix(n, ".") {
			continue
		}
		name := path.Join(dir, n)
		if reason := badName(n, idWhat); reason != "" {
			out = append(out, workspace.Skipped{File: name, Reason: reason + ": " + consequence})
			continue
		}
		if fi, err := w.root.Lstat(name); err == nil && !fi.IsDir() {
			out = append(out, workspace.Skipped{File: name, Reason: "is " + w.describe(name, fi.Mode()) + ", not " + what + ": " + consequence})
		}
	}
	return out, nil
}

// skippedThreads reports the files of a task's threads/ that thread list
// passes over (names that are no thread's) or fails on (unreadable).
func (w *Store) skippedThreads(ctx context.Context, id string) ([]workspace.Skipped, error) {
	dir := path.Join(workspace.TaskDir(id), "threads")
	names, err := w.readNames(dir)
	if err != nil {
		return nil, err
	}
	var out []workspace.Skipped
	for _, n := range names {
		if strings.HasPrefix(n, ".") {
			continue
		}
		name := path.Join(dir, n)
		tid, ok := strings.CutSuffix(n, ".json")
		if !ok {
			out = append(out, workspace.Skipped{File: name, Reason: "not a thread file (threads are threads/<thread id>.json): thread list passes it over"})
			continue
		}
		if reason := badName(tid, "thread id"); reason != "" {
			out = append(out, workspace.Skipped{File: name, Reason: reason + ": thread list passes it over"})
			continue
		}
		if _, err := w.GetThread(ctx, id, tid); err != nil {
			out = append(out, workspace.Skipped{File: name, Reason: "unreadable: " + errorText(err) + ": thread list fails on it and context leaves it out"})
		}
	}
	return out, nil
}

// skippedProducts reports the files of a task's outputs/ or reviews/ that
// no done marker can name, or that the daemon rejects when one does.
func (w *Store) skippedProducts(ctx context.Context, id, sub string) ([]workspace.Skipped, error) {
	dir := path.Join(workspace.TaskDir(id), sub)
	names, err := w.readNames(dir)
	if err != nil {
		return nil, err
	}
	idWhat := "subtask id"
	if sub == "reviews" {
		idWhat = "review id"
	}
	var out []workspace.Skipped
	for _, n := range names {
		if strings.HasPrefix(n, ".") || n == workspace.HistoryDir {
			continue // history/ keeps the versions writes replaced
		}
		name := path.Join(dir, n)
		base, ok := strings.CutSuffix(n, ".json")
		if !ok {
			out = append(out, workspace.Skipped{File: name, Reason: "no done marker can name it (" + sub + " are " + sub + "/<" + idWhat + ">.json): the daemon never reads it"})
			continue
		}
		if reason := badName(base, idWhat); reason != "" {
			out = append(out, workspace.Skipped{File: name, Reason: reason + ": no done marker can name it, so the daemon never reads it"})
			continue
		}
		if _, err := w.ReadProduct(ctx, id, sub+"/"+n); err != nil {
			out = append(out, workspace.Skipped{File: name, Reason: "the daemon rejects it: " + errorText(err)})
		}
	}
	return out, nil
}

// badName says why n is not a valid id of the kind what, or "".
func badName(n, what string) string {
	switch {
	case !utf8.ValidString(n):
		return "its name is not UTF-8, so it is not a " + what
	case workspace.ValidateID(what, n) != nil:
		return "its name " + strconv.Quote(n) + " is not a valid " + what
	}
	return ""
}

// kindOf names the type of a file: "regular file", "symlink", …
func kindOf(m fs.FileMode) string {
	if m.IsRegular() {
		return "regular file"
	}
	return workspace.FileKind(m)
}

// describe names the file name (relative to the root) of mode m with its
// article, and a symlink's target: `a symlink (to "v1")`.
func (w *Store) describe(name string, m fs.FileMode) string {
	if m&fs.ModeSymlink != 0 {
		if target, err := w.root.Readlink(name); err == nil {
			return "a symlink (to " + strconv.Quote(target) + ")"
		}
	}
	return "a " + kindOf(m)
}

// errorText is err's message without the operation prefix a workspace
// Error carries (the file is named beside it already).
func errorText(err error) string {
	var e *workspace.Error
	if errors.As(err, &e) && e.Op != "" {
		return strings.TrimPrefix(err.Error(), e.Op+": ")
	}
	return err.Error()
}

// readNames lists dir (relative to the root), sorted; a missing directory
// has no names.
func (w *Store) readNames(dir string) ([]string, error) {
	f, err := w.root.Open(dir)
	if err != nil {
		if isNotExist(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	defer f.Close()
	var names []string
	for {
		batch, err := f.Readdirnames(1024)
		names = append(names, batch...)
		if err == io.EOF || len(batch) == 0 {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", dir, err)
		}
	}
	sort.Strings(names)
	return names, nil
}
