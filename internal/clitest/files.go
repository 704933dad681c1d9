package clitest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/fixture"
	"github.com/workspaced/workspaced/internal/fixture/scale"
	"github.com/workspaced/workspaced/internal/poll"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"
	"github.com/workspaced/workspaced/workspace/machine"
)

// Helpers for a directory root: the workspace opened in-process as an
// agent library opens it, waits on its state, and the invariants a test
// checks on its files after the daemon has run.

// NewDir is New on a fresh directory root, DIR/workspace under a new
// temporary directory DIR, or under dir when one is given (a mount, say).
// Without dir, commands run in DIR, so that a relative path "workspace"
// names the root; with one, they run in a directory of their own.
func NewDir(t testing.TB, dir ...string) *WS {
	t.Helper()
	if len(dir) > 0 {
		return New(t, filepath.Join(dir[0], "workspace"))
	}
	w := At(t, filepath.Join(t.TempDir(), "workspace"))
	w.Dir = filepath.Dir(w.Root)
	w.Ok("init")
	return w
}

// NewScale is a WS on a fresh directory root, DIR/workspace, that
// scale.Tree wrote instead of init (active tasks executing,
// finished ones completed); commands run in DIR.
func NewScale(t testing.TB, active, finished int) *WS {
	t.Helper()
	w := At(t, filepath.Join(t.TempDir(), "workspace"))
	w.Dir = filepath.Dir(w.Root)
	if err := (scale.Tree{Active: active, Finished: finished}).Write(w.Root); err != nil {
		t.Fatal(err)
	}
	return w
}

// Open opens w's root in-process, as an agent library would; the test's
// cleanup closes it.
func (w *WS) Open() *files.Store {
	w.T.Helper()
	x, err := files.Open(w.Root, workspace.Options{})
	if err != nil {
		w.T.Fatal(err)
	}
	w.T.Cleanup(func() { x.Close() })
	return x
}

// Eventually is poll.Until with 90 s, a deadline generous enough for a
// loaded machine.
func Eventually(t testing.TB, what string, cond func() (bool, string)) {
	t.Helper()
	poll.Until(t, 90*time.Second, what, cond)
}

// Parallel runs n workers at once (released together) and fails t with
// the first error any returns.
func Parallel(t testing.TB, n int, work func(p int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := make(chan struct{})
	for p := range n {
		wg.Go(func() {
			<-start
			if err := work(p); err != nil {
				errs <- fmt.Errorf("worker %d: %w", p, err)
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// StateWhere waits, as Eventually does, until task id's state satisfies
// cond and returns it.
func StateWhere(t testing.TB, x *files.Store, id string, cond func(workspace.State) bool) workspace.State {
	t.Helper()
	return poll.State(t, 90*time.Second, x, id, cond)
}

// ExecutingTask prepares a task with n subtasks and waits until the
// running daemon has taken it to executing.
func ExecutingTask(t testing.TB, x *files.Store, id string, n int) {
	t.Helper()
	if err := fixture.PrepareTask(context.Background(), x, id, n); err != nil {
		t.Fatal(err)
	}
	StateWhere(t, x, id, func(st workspace.State) bool { return st.PlanStatus == "proposed" })
	if err := fixture.ApprovePlan(context.Background(), x, id); err != nil {
		t.Fatal(err)
	}
	StateWhere(t, x, id, func(st workspace.State) bool { return st.Status == "executing" })
}

// CheckStates fails t unless every task's state.json parses and validates.
func CheckStates(t testing.TB, x *files.Store, ids []string) {
	t.Helper()
	for _, id := range ids {
		data, err := os.ReadFile(filepath.Join(x.Dir(), "tasks", id, "state.json"))
		if err != nil {
			t.Fatalf("task %s: %v", id, err)
		}
		if _, err := files.ValidateState(id, data); err != nil {
			t.Fatalf("task %s: state.json does not validate: %v", id, err)
		}
	}
}

// CheckJournal fails t unless the journal of task id holds seqs 1..n,
// contiguous, no two records of one marker file, no taken marker left
// behind (call it after a clean stop, which settles the journal) and no
// marker left in the task directory. It returns the records.
func CheckJournal(t testing.TB, x *files.Store, id string) []workspace.JournalRecord {
	t.Helper()
	recs, err := x.ReadJournal(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	byFile := map[string]int64{}
	for i, r := range recs {
		if r.Seq != int64(i+1) {
			t.Fatalf("task %s: record %d has seq %d: the journal is not contiguous", id, i+1, r.Seq)
		}
		if prev, dup := byFile[r.File]; dup {
			t.Fatalf("task %s: marker %s journaled twice (seq %d and %d)", id, r.File, prev, r.Seq)
		}
		byFile[r.File] = r.Seq
	}
	ents, _ := os.ReadDir(filepath.Join(x.Dir(), "tasks", id, "journal"))
	for _, e := range ents {
		if strings.Contains(e.Name(), ".taken") {
			t.Errorf("task %s: taken marker left in journal/: %s", id, e.Name())
		}
	}
	ents, _ = os.ReadDir(filepath.Join(x.Dir(), "tasks", id))
	for _, e := range ents {
		if _, ok := workspace.IsMarkerName(e.Name()); ok {
			t.Errorf("task %s: marker left behind: %s", id, e.Name())
		}
	}
	return recs
}

// CheckEventsOnce fails t unless task id's events.log holds every event
// its journal makes, exactly once and in order: the journal replayed by
// the state machine from the task's first state gives the events every
// commit must have logged (lines of other events, an agent's env_stored
// say, may sit between them). It returns how many records and events it
// counted.
func CheckEventsOnce(t testing.TB, x *files.Store, id string) (records, events int) {
	t.Helper()
	recs, err := x.ReadJournal(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(x.Dir(), filepath.FromSlash(workspace.TaskDir(id)), workspace.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	return len(recs), checkJournalEvents(t, x, id, recs, strings.Split(strings.TrimSuffix(string(data), "\n"), "\n"))
}

// EventLog is what CheckJournalEvents reads: a task and its logged
// events, of a *files.Store or of any workspace.Store.
type EventLog interface {
	GetTask(ctx context.Context, id string) (workspace.Task, error)
	ReadEvents(ctx context.Context, taskID string) ([]workspace.Event, []error, error)
}

// JournalPlans looks a plan version up in the journal recs, as
// machine.Continue asks for the plan a record approves.
func JournalPlans(recs []workspace.JournalRecord) func(version int) (*workspace.Plan, error) {
	return func(version int) (*workspace.Plan, error) {
		for _, r := range slices.Backward(recs) {
			if r.Plan != nil && r.Plan.Version == version {
				return r.Plan, nil
			}
		}
		return nil, fmt.Errorf("no plan v%d in the journal", version)
	}
}

// CheckJournalEvents is CheckEventsOnce for the journal recs of task id
// in any store: every event the journal makes is logged exactly once and
// in order, and every logged line parses. It returns how many events it
// counted.
func CheckJournalEvents(t testing.TB, l EventLog, id string, recs []workspace.JournalRecord) int {
	t.Helper()
	return checkJournalEvents(t, l, id, recs, nil)
}

// checkJournalEvents is CheckJournalEvents; given the log's lines as
// they are (lines, on files), it allows a line cut short that is the
// start of one of the journal's event lines: a daemon killed in the
// write of its events (a write that crossed a page of the file) leaves
// the start of a line, which its next commit ends and follows with the
// lines whole.
func checkJournalEvents(t testing.TB, l EventLog, id string, recs []workspace.JournalRecord, lines []string) int {
	t.Helper()
	task, err := l.GetTask(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	_, evs, err := machine.Continue(machine.Init(task), JournalPlans(recs), recs)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]string, len(evs))
	wanted := map[string]int{}
	for i, e := range evs {
		want[i] = workspace.FormatEvent(e)
		wanted[want[i]]++
	}
	logged, bad, err := l.ReadEvents(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	seen := map[string]int{}
	for _, e := range logged {
		if l := workspace.FormatEvent(e); wanted[l] > 0 {
			got = append(got, l)
			seen[l]++
		}
	}
	missing, twice := 0, 0
	for l, n := range wanted {
		missing += max(n-seen[l], 0)
		twice += max(seen[l]-n, 0)
	}
	if missing > 0 || twice > 0 || !slices.Equal(got, want) {
		t.Errorf("task %s: of the %d events of its %d records, %d missing from events.log and %d logged more than once (in order: %v)",
			id, len(want), len(recs), missing, twice, slices.Equal(got, want))
		firstDifference(t, got, want)
	}
	if lines != nil {
		bad = nil
		for _, line := range lines {
			if strings.TrimSpace(line) == "" {
				continue
			}
			_, err := workspace.ParseEvent(line)
			if err == nil {
				continue
			}
			if slices.ContainsFunc(want, func(w string) bool { return len(line) < len(w) && strings.HasPrefix(w, line) }) {
				t.Logf("task %s: events.log holds the start of a line a crash cut short, then the line whole: %q", id, line)
				continue
			}
			bad = append(bad, err)
		}
	}
	if len(bad) > 0 {
		t.Errorf("task %s: %d lines of events.log do not parse: %v", id, len(bad), bad[0])
	}
	return len(want)
}

// firstDifference reports the first event where got and want differ.
func firstDifference(t testing.TB, got, want []string) {
	t.Helper()
	for i := range max(len(got), len(want)) {
		g, w := "-", "-"
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Errorf("first difference at event %d:\n  logged %s\n  want   %s", i+1, g, w)
			return
		}
	}
}

// Status is `workspaced status --json`: the tree's status and what the
// serving daemon said of itself.
type Status struct {
	files.Status
	Live *workspace.Live `json:"live,omitempty"`
}

// StatusJSON runs `workspaced status --json` and parses it.
func (w *WS) StatusJSON() Status {
	w.T.Helper()
	var s Status
	Decode(w.T, w.Ok("status", "--json"), &s)
	return s
}

// Live is the serving daemon's report as `status --json` gives it (nil
// when no daemon answers).
func (w *WS) Live() *workspace.Live {
	w.T.Helper()
	var s Status
	if err := json.Unmarshal([]byte(w.Ok("status", "--json")), &s); err != nil {
		w.T.Fatal(err)
	}
	return s.Live
}

// LiveNow asks the daemon serving w's directory root for its report
// through its socket, failing the test when none answers.
func (w *WS) LiveNow() workspace.Live {
	w.T.Helper()
	l, err := files.ReadLive(w.Root)
	if err != nil {
		w.T.Fatalf("read the daemon's report: %v", err)
	}
	return l
}

// AwaitRescans waits until the daemon has ended n full scans after the
// moment it is called.
func (w *WS) AwaitRescans(n int) {
	w.T.Helper()
	last := w.LiveNow().LastRescan
	seen := 0
	Eventually(w.T, fmt.Sprintf("%d full rescans", n), func() (bool, string) {
		l, err := files.ReadLive(w.Root)
		if err != nil {
			return false, err.Error()
		}
		if l.LastRescan.After(last) {
			last = l.LastRescan
			seen++
		}
		return seen >= n, fmt.Sprintf("%d rescans seen, the last at %s", seen, last.Format(time.RFC3339Nano))
	})
}

// AwaitServing waits until the daemon answers on its socket with its
// start-up scan done, and returns its report.
func (w *WS) AwaitServing() workspace.Live {
	w.T.Helper()
	var l workspace.Live
	Eventually(w.T, "the daemon's start-up scan", func() (bool, string) {
		var err error
		l, err = files.ReadLive(w.Root)
		if err != nil {
			return false, err.Error()
		}
		return !l.LastRescan.IsZero(), "no rescan yet"
	})
	return l
}

// Tree lists every file and directory under w's directory root with a
// hash of its content, leaving out .locks/ (lock files are made on demand
// and never deleted; they hold no data).
func (w *WS) Tree() map[string]string {
	w.T.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(w.Root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(w.Root, p)
		if d.IsDir() {
			if d.Name() == ".locks" {
				return filepath.SkipDir
			}
			out[rel+"/"] = "dir"
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			out[rel] = "symlink to " + target
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		out[rel] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		w.T.Fatal(err)
	}
	return out
}

// SameTree fails t, listing the paths added, changed and gone, unless
// the two Tree listings are equal; what names the change.
func SameTree(t testing.TB, before, after map[string]string, what string) {
	t.Helper()
	if reflect.DeepEqual(before, after) {
		return
	}
	var diff []string
	for k, v := range after {
		if before[k] != v {
			diff = append(diff, "+ "+k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			diff = append(diff, "- "+k)
		}
	}
	sort.Strings(diff)
	t.Fatalf("%s changed the tree:\n%s", what, strings.Join(diff, "\n"))
}

// TailLines is the last n lines of s, for a long log in a failure.
func TailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// ProposePlan creates task id and has the coordinator propose
// PlanJSON(n, deps) for it, and waits until the daemon has applied it.
func (w *WS) ProposePlan(x *files.Store, id, description string, n int, deps bool) {
	w.T.Helper()
	w.Ok("task", "create", "--id", id, "--description", description)
	w.OkIn(PlanJSON(n, deps), "plan", "write", "--task", id, "--file", "-", "--agent", "coordinator", "--propose")
	StateWhere(w.T, x, id, func(s workspace.State) bool { return s.PlanStatus == "proposed" })
}

// WriteTokenFile writes a token file of mode into w's directory and
// returns its path.
func (w *WS) WriteTokenFile(name, data string, mode os.FileMode) string {
	w.T.Helper()
	path := filepath.Join(w.Dir, name)
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		w.T.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		w.T.Fatal(err)
	}
	return path
}
