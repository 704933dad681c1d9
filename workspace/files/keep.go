package files

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files/agentfile"
)

// Work an agent reported finished is never overwritten without a trace.
//
// Outputs and reviews are written under the task's lock, the lock the
// daemon holds while it takes markers and writes state.json, so that what
// decides whether a product is final — state.json, the done markers
// waiting in the task directory, the journal — cannot change while it is
// read:
//
//   - an output is final once its subtask is completed, or once a done
//     marker reporting it completed waits in the task directory for the
//     daemon. Writing it again is a conflict. Otherwise (the subtask
//     failed, is being retried, or the output was never reported) the
//     output it replaces is kept as outputs/history/<subtask>.v<N>.json;
//   - a review is final once a done marker reported it: one waits in the
//     task directory, or the daemon has journaled one without rejecting
//     it. Writing it again is a conflict (a new decision is a new review,
//     under a new id). Otherwise the review it replaces is kept as
//     reviews/history/<id>.v<N>.json;
//   - a plan is never replaced: every version is kept as
//     plans/plan_v<N>.json (WritePlan).
//
// N counts from 1, in the order the versions were replaced.

// lockTaskForProduct takes the task's lock for writing a product. The
// wait ends at the workspace's lock timeout, or earlier when ctx ends.
func (w *Store) lockTaskForProduct(ctx context.Context, taskID, agent string) (*locking.Lock, error) {
	if agent == "" {
		agent = "cli"
	}
	return w.LockTask(ctx, taskID, agent)
}

// replaceProduct writes data as rel (relative to the task directory) of a
// task whose lock the caller holds, keeping the file it replaces in the
// history: it returns the kept version's path ("" when there was none, or
// when the file already holds exactly data, which is then not written).
func (w *Store) replaceProduct(taskID, dir, id string, data []byte) (kept string, err error) {
	rel := path.Join(dir, id+".json")
	name := path.Join(workspace.TaskDir(taskID), rel)
	// Both directories must be the task's own: a symlinked outputs/ or
	// history/ would lead the write, or the version kept, into another
	// task.
	for _, d := range []string{dir, path.Join(dir, workspace.HistoryDir)} {
		if st, err := w.root.Lstat(path.Join(workspace.TaskDir(taskID), d)); err == nil && !st.IsDir() {
			return "", &workspace.Error{Kind: workspace.ErrUnsafe, Op: "write " + rel, Msg: fmt.Sprintf("%s/ is a %s, not a directory of the task", d, workspace.FileKind(st.Mode())),
				Hint: "move it away; the workspace creates the directory itself"}
		}
	}
	prev, err := w.ReadFile(name)
	switch {
	case errors.Is(err, workspace.ErrNotFound):
	case err != nil:
		return "", &workspace.Error{Kind: workspace.ErrUnsafe, Op: "replace " + rel, Err: err,
			Hint: "the file in its place cannot be kept; move it away, then write again"}
	case string(prev) == string(data):
		return "", nil
	default:
		n, err := w.nextHistory(taskID, dir, id)
		if err != nil {
			return "", err
		}
		kept = workspace.HistoryName(dir, id, n)
		if err := w.Write(path.Join(workspace.TaskDir(taskID), kept), prev); err != nil {
			return "", fmt.Errorf("keep the replaced %s: %w", rel, err)
		}
	}
	return kept, w.Write(name, data)
}

// nextHistory is the next free version number of product id in
// dir/history/ of a task.
func (w *Store) nextHistory(taskID, dir, id string) (int, error) {
	hist := path.Join(workspace.TaskDir(taskID), dir, workspace.HistoryDir)
	f, err := w.root.Open(hist)
	if errors.Is(err, fs.ErrNotExist) {
		return 1, nil
	}
	if err != nil {
		return 0, fmt.Errorf("list %s: %w", hist, err)
	}
	defer f.Close()
	top := 0
	for {
		names, err := f.Readdirnames(1024)
		for _, n := range names {
			if pid, v, ok := workspace.HistoryVersion(n); ok && pid == id {
				top = max(top, v)
			}
		}
		if err == io.EOF || len(names) == 0 {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("list %s: %w", hist, err)
		}
	}
	return top + 1, nil
}

// checkOutputOpen refuses, with a conflict naming why, to replace the
// output rel of subtask subtaskID when it is final. The caller holds the
// task's lock.
func (w *Store) checkOutputOpen(ctx context.Context, taskID, subtaskID, rel string) error {
	op := "write output " + rel
	var state *workspace.State
	st, err := w.ReadState(ctx, taskID)
	switch {
	case err == nil:
		state = &st
	case errors.Is(err, workspace.ErrNotFound):
	default:
		return fmt.Errorf("%s: read the state to see whether it is final: %w", op, err)
	}
	ms, err := w.waitingDone(taskID)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return workspace.OutputFinal(subtaskID, rel, state, ms)
}

// checkReviewOpen refuses, with a conflict naming why, to replace the
// review rel once a done marker reported it. The caller holds the task's
// lock.
func (w *Store) checkReviewOpen(taskID, rel string) error {
	op := "write review " + rel
	ms, err := w.waitingDone(taskID)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if err := workspace.ReviewFinal(rel, ms, 0); err != nil {
		return err
	}
	seq, err := w.journaledProduct(taskID, rel)
	if err != nil {
		return fmt.Errorf("%s: read the journal to see whether it was reported: %w", op, err)
	}
	return workspace.ReviewFinal(rel, nil, seq)
}

// waitingDone reads the done markers waiting in a task directory. A marker
// that cannot be read or decoded is passed over: it is still being
// written, or the daemon will reject it.
func (w *Store) waitingDone(taskID string) ([]workspace.WaitingDone, error) {
	dir := workspace.TaskDir(taskID)
	f, err := w.root.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("list markers of task %s: %w", taskID, err)
	}
	defer f.Close()
	var names []string
	for {
		batch, err := f.Readdirnames(1024)
		for _, n := range batch {
			if k, ok := workspace.IsMarkerName(n); ok && k == workspace.KindDone {
				names = append(names, n)
			}
		}
		if err == io.EOF || len(batch) == 0 {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("list markers of task %s: %w", taskID, err)
		}
	}
	sort.Strings(names)
	var out []workspace.WaitingDone
	for _, n := range names {
		data, err := agentfile.Read(w.root, path.Join(dir, n), int64(w.settings.Limits.MaxFileBytes))
		if err != nil {
			continue
		}
		var m workspace.Marker
		if workspace.CheckDepth(data, w.settings.Limits.MaxDepth) != nil || json.Unmarshal(data, &m) != nil {
			continue
		}
		out = append(out, workspace.WaitingDone{Name: n, Marker: m})
	}
	return out, nil
}

// journalFile is any record file of a task's journal: one record, or the
// records of a chunk under "records".
type journalFile struct {
	workspace.JournalRecord
	Records []workspace.JournalRecord `json:"records"`
}

// journaledProduct returns the seq of the first done record for rel in a
// task's journal that the daemon did not reject, or 0 when there is none.
// It reads the record files (<seq>.json, <first>-<last>.json) and the
// markers taken but not yet recorded (<seq>.taken<marker name>).
//
// The daemon settles the journal without the task's lock (a taken marker
// becomes part of a record file, record files are merged), so a file
// listed may be gone when it is read: its records are then in a file the
// next listing shows, and the journal is read again.
func (w *Store) journaledProduct(taskID, rel string) (int64, error) {
	for range journalReadTries - 1 {
		seq, err := w.journaledProductOnce(taskID, rel)
		if !errors.Is(err, errJournalMoved) {
			return seq, err
		}
	}
	return w.journaledProductOnce(taskID, rel)
}

// journalReadTries bounds how many times journaledProduct reads a journal
// that keeps changing under it.
const journalReadTries = 8

// errJournalMoved is a journal file listed but gone when read.
var errJournalMoved = errors.New("a journal file moved while it was read")

func (w *Store) journaledProductOnce(taskID, rel string) (int64, error) {
	dir := path.Join(workspace.TaskDir(taskID), "journal")
	f, err := w.root.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var names []string
	for {
		batch, err := f.Readdirnames(1024)
		for _, n := range batch {
			if !strings.HasPrefix(n, ".") {
				names = append(names, n)
			}
		}
		if err == io.EOF || len(batch) == 0 {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	sort.Strings(names)
	limit := int64(w.settings.Limits.MaxFileBytes)
	for _, n := range names {
		taken := strings.Index(n, ".taken"+workspace.DonePrefix)
		if taken < 0 && !strings.HasSuffix(n, ".json") {
			continue
		}
		data, err := agentfile.Read(w.root, path.Join(dir, n), limit)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, workspace.ErrNotFound) {
			return 0, fmt.Errorf("read %s: %w", n, errJournalMoved)
		}
		if err != nil {
			return 0, err
		}
		if taken >= 0 {
			var m workspace.Marker
			seq, _ := strconv.ParseInt(n[:taken], 10, 64)
			if json.Unmarshal(data, &m) == nil && m.OutputFile == rel && seq > 0 {
				return seq, nil
			}
			continue
		}
		var jf journalFile
		if err := json.Unmarshal(data, &jf); err != nil {
			return 0, fmt.Errorf("decode %s: %w", n, err)
		}
		recs := jf.Records
		if recs == nil {
			recs = []workspace.JournalRecord{jf.JournalRecord}
		}
		for _, r := range recs {
			if r.Kind == workspace.KindDone && r.Rejected == "" && r.Marker.OutputFile == rel {
				return r.Seq, nil
			}
		}
	}
	return 0, nil
}
