package workspace

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

// HistoryDir is the directory, inside outputs/ and reviews/, that keeps
// the versions a product replaced.
const HistoryDir = "history"

// subtaskCompleted is a subtask's status once its work is done, in the
// state machine's words (package machine imports this one).
const subtaskCompleted = "completed"

// HistoryName is the path, relative to the task directory, of version n
// of the product id kept in dir ("outputs", "reviews"):
// outputs/history/st_3.v1.json.
func HistoryName(dir, id string, n int) string {
	return path.Join(dir, HistoryDir, id+".v"+strconv.Itoa(n)+".json")
}

// HistoryVersion reads a name of a history directory back: the product's
// id and the version, or ok false for any other name.
func HistoryVersion(name string) (id string, n int, ok bool) {
	base, found := strings.CutSuffix(name, ".json")
	if !found {
		return "", 0, false
	}
	i := strings.LastIndex(base, ".v")
	if i <= 0 {
		return "", 0, false
	}
	digits := base[i+2:]
	if digits == "" || strings.Trim(digits, "0123456789") != "" || digits[0] == '0' {
		return "", 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil || ValidateID("product id", base[:i]) != nil {
		return "", 0, false
	}
	return base[:i], n, true
}

// lockTaskForProduct takes the task's lock for writing a product. The
// wait ends at the workspace's lock timeout, or earlier when ctx ends.
func (w *Workspace) lockTaskForProduct(ctx context.Context, taskID, agent string) (*locking.Lock, error) {
	if agent == "" {
		agent = "cli"
	}
	return w.LockTask(ctx, taskID, agent)
}

// replaceProduct writes data as rel (relative to the task directory) of a
// task whose lock the caller holds, keeping the file it replaces in the
// history: it returns the kept version's path ("" when there was none, or
// when the file already holds exactly data, which is then not written).
func (w *Workspace) replaceProduct(taskID, dir, id string, data []byte) (kept string, err error) {
	rel := path.Join(dir, id+".json")
	name := path.Join(TaskDir(taskID), rel)
	// Both directories must be the task's own: a symlinked outputs/ or
	// history/ would lead the write, or the version kept, into another
	// task.
	for _, d := range []string{dir, path.Join(dir, HistoryDir)} {
		if st, err := w.root.Lstat(path.Join(TaskDir(taskID), d)); err == nil && !st.IsDir() {
			return "", &Error{Kind: ErrUnsafe, Op: "write " + rel, Msg: fmt.Sprintf("%s/ is a %s, not a directory of the task", d, FileKind(st.Mode())),
				Hint: "move it away; the workspace creates the directory itself"}
		}
	}
	prev, err := w.ReadFile(name)
	switch {
	case errors.Is(err, ErrNotFound):
	case err != nil:
		return "", &Error{Kind: ErrUnsafe, Op: "replace " + rel, Err: err,
			Hint: "the file in its place cannot be kept; move it away, then write again"}
	case string(prev) == string(data):
		return "", nil
	default:
		n, err := w.nextHistory(taskID, dir, id)
		if err != nil {
			return "", err
		}
		kept = HistoryName(dir, id, n)
		if err := w.Write(path.Join(TaskDir(taskID), kept), prev); err != nil {
			return "", fmt.Errorf("keep the replaced %s: %w", rel, err)
		}
	}
	return kept, w.Write(name, data)
}

// nextHistory is the next free version number of product id in
// dir/history/ of a task.
func (w *Workspace) nextHistory(taskID, dir, id string) (int, error) {
	hist := path.Join(TaskDir(taskID), dir, HistoryDir)
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
			if pid, v, ok := HistoryVersion(n); ok && pid == id {
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

// finalErr is the conflict of writing a product that is final.
func finalErr(op, hint, format string, args ...any) error {
	return &Error{Kind: ErrConflict, Op: op, Msg: fmt.Sprintf(format, args...), Hint: hint}
}

// checkOutputOpen refuses, with a conflict naming why, to replace the
// output rel of subtask subtaskID when it is final. The caller holds the
// task's lock.
func (w *Workspace) checkOutputOpen(ctx context.Context, taskID, subtaskID, rel string) error {
	op := "write output " + rel
	var state *State
	st, err := w.ReadState(ctx, taskID)
	switch {
	case err == nil:
		state = &st
	case errors.Is(err, ErrNotFound):
	default:
		return fmt.Errorf("%s: read the state to see whether it is final: %w", op, err)
	}
	ms, err := w.waitingDone(taskID)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return OutputFinal(subtaskID, rel, state, ms)
}

// OutputFinal is the conflict of replacing the output rel of subtask
// subtaskID when it is final: the state (nil before the first) has the
// subtask completed, or a done marker waiting reports it completed. nil
// when it may be replaced. Every backend decides with it.
func OutputFinal(subtaskID, rel string, st *State, waiting []WaitingDone) error {
	op := "write output " + rel
	if st != nil {
		if ss := st.Subtasks[subtaskID]; ss != nil && ss.Status == subtaskCompleted {
			who := ""
			if ss.Worker != "" {
				who = " by " + ss.Worker
			}
			return finalErr(op, "a finished subtask's output is final; only a checkpoint review asking for revision sends the subtask back, and then its output may be written again",
				"subtask %s was completed%s; its output is final", subtaskID, who)
		}
		for _, id := range sortedIDs(st.Subtasks) {
			if ss := st.Subtasks[id]; ss != nil && ss.Status == subtaskCompleted && ss.Output == rel {
				return finalErr(op, "a finished subtask's output is final", "subtask %s was completed with %s; it is final", id, rel)
			}
		}
	}
	for _, m := range waiting {
		if m.Marker.OutputFile == rel && (m.Marker.Status == "" || m.Marker.Status == "completed") {
			return finalErr(op, "wait for the daemon to apply it; if it refuses the marker, write again",
				"done marker %s reports it completed and waits for the daemon", m.Name)
		}
	}
	return nil
}

// checkReviewOpen refuses, with a conflict naming why, to replace the
// review rel once a done marker reported it. The caller holds the task's
// lock.
func (w *Workspace) checkReviewOpen(taskID, rel string) error {
	op := "write review " + rel
	ms, err := w.waitingDone(taskID)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if err := ReviewFinal(rel, ms, 0); err != nil {
		return err
	}
	seq, err := w.journaledProduct(taskID, rel)
	if err != nil {
		return fmt.Errorf("%s: read the journal to see whether it was reported: %w", op, err)
	}
	return ReviewFinal(rel, nil, seq)
}

// ReviewFinal is the conflict of replacing the review rel once a done
// marker reported it: one of waiting names it, or the journal record seq
// (0 for none) took it without rejecting it. Every backend decides with
// it.
func ReviewFinal(rel string, waiting []WaitingDone, seq int64) error {
	op := "write review " + rel
	hint := "a reported review is final; write the new decision as a review with a new id, and report that one"
	for _, m := range waiting {
		if m.Marker.OutputFile == rel {
			return finalErr(op, hint, "done marker %s reported it and waits for the daemon", m.Name)
		}
	}
	if seq > 0 {
		return finalErr(op, hint, "it was reported (journal record %d)", seq)
	}
	return nil
}

// WaitingDone is a done marker waiting for the daemon: its name and
// what it says.
type WaitingDone struct {
	Name   string
	Marker Marker
}

// waitingDone reads the done markers waiting in a task directory. A marker
// that cannot be read or decoded is passed over: it is still being
// written, or the daemon will reject it.
func (w *Workspace) waitingDone(taskID string) ([]WaitingDone, error) {
	dir := TaskDir(taskID)
	f, err := w.root.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("list markers of task %s: %w", taskID, err)
	}
	defer f.Close()
	var names []string
	for {
		batch, err := f.Readdirnames(1024)
		for _, n := range batch {
			if k, ok := IsMarkerName(n); ok && k == KindDone {
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
	var out []WaitingDone
	for _, n := range names {
		data, err := ReadAgentFile(w.root, path.Join(dir, n), int64(w.settings.Limits.MaxFileBytes))
		if err != nil {
			continue
		}
		var m Marker
		if CheckDepth(data, w.settings.Limits.MaxDepth) != nil || json.Unmarshal(data, &m) != nil {
			continue
		}
		out = append(out, WaitingDone{Name: n, Marker: m})
	}
	return out, nil
}

// journalFile is any record file of a task's journal: one record, or the
// records of a chunk under "records".
type journalFile struct {
	JournalRecord
	Records []JournalRecord `json:"records"`
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
func (w *Workspace) journaledProduct(taskID, rel string) (int64, error) {
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

func (w *Workspace) journaledProductOnce(taskID, rel string) (int64, error) {
	dir := path.Join(TaskDir(taskID), "journal")
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
		taken := strings.Index(n, ".taken"+DonePrefix)
		if taken < 0 && !strings.HasSuffix(n, ".json") {
			continue
		}
		data, err := ReadAgentFile(w.root, path.Join(dir, n), limit)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrNotFound) {
			return 0, fmt.Errorf("read %s: %w", n, errJournalMoved)
		}
		if err != nil {
			return 0, err
		}
		if taken >= 0 {
			var m Marker
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
			recs = []JournalRecord{jf.JournalRecord}
		}
		for _, r := range recs {
			if r.Kind == KindDone && r.Rejected == "" && r.Marker.OutputFile == rel {
				return r.Seq, nil
			}
		}
	}
	return 0, nil
}

func sortedIDs[V any](m map[string]V) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}
