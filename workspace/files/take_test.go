package files

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/fixture"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/daemon"
)

// tester commits the tasks of a tree by hand, as the daemon does, each
// through one committer.
type tester struct {
	s  *Store
	cs map[string]*committer
}

// newDaemon is a tree at dir whose tasks the test commits itself.
func newDaemon(t *testing.T, dir string) *tester {
	t.Helper()
	s, err := Open(dir, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.SetServeOptions(ServeOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	t.Cleanup(func() { s.Close() })
	return &tester{s: s, cs: map[string]*committer{}}
}

// executingTask is a workspace with task t1 of n subtasks whose plan is
// proposed and approved, and a tester that has taken both.
func executingTask(t *testing.T, n int) (string, *Store, *tester) {
	t.Helper()
	dir, ws := newWorkspace(t)
	prepare(t, ws, "t1", n)
	d := newDaemon(t, dir)
	process(t, d, "t1")
	if err := fixture.ApprovePlan(t.Context(), ws, "t1"); err != nil {
		t.Fatal(err)
	}
	process(t, d, "t1")
	return dir, ws, d
}

// testMax is the most markers one commit takes in these tests, as the
// daemon asks by default.
const testMax = daemon.DefaultMax

// process commits task id until nothing more waits, as the daemon does
// when the task's directory changed, and adds up what the commits took.
func process(t testing.TB, d *tester, id string) workspace.Applied {
	t.Helper()
	var sum workspace.Applied
	for {
		a, err := d.taskOf(id).Commit(context.Background(), workspace.CommitRequest{Max: testMax})
		if err != nil {
			t.Fatal(err)
		}
		a.Taken += sum.Taken
		sum = a
		if !a.More {
			return sum
		}
	}
}

// taskOf returns the committer of id, adding one as the daemon does.
func (d *tester) taskOf(id string) *committer {
	c := d.cs[id]
	if c == nil {
		c = d.s.Committer(id).(*committer)
		d.cs[id] = c
	}
	return c
}

// settleAll settles every task's work, as the daemon does a little after
// a burst, and reports whether there was any.
func settleAll(t testing.TB, d *tester) bool {
	t.Helper()
	any := false
	for _, c := range d.cs {
		if c.settled() {
			continue
		}
		any = true
		if err := c.settle(); err != nil {
			t.Fatal(err)
		}
	}
	return any
}

// touch makes a marker-named file with the given mtime.
func touch(t *testing.T, dir, name string, mtime time.Time) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

func names(ps []pendingMarker) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.name)
	}
	return out
}

// The lister keeps markers in drop order (mtime, then name), ignores
// other files, hands them out a chunk at a time, and reads the directory
// again only when what it listed runs out, at most maxLists times.
func TestListerOrderAndChunks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	touch(t, dir, ".done.b", t0.Add(2*time.Second))
	touch(t, dir, ".done.a", t0.Add(2*time.Second))
	touch(t, dir, ".claim.z", t0)
	touch(t, dir, "state.json", t0)
	touch(t, dir, ".tmp-x", t0)
	for i := range chunk + 5 {
		touch(t, dir, fmt.Sprintf(".done.w%02d", i), t0.Add(time.Hour+time.Duration(i)*time.Millisecond))
	}
	td, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer td.Close()
	ls := &lister{td: td}
	ls.list()
	if ls.err != nil {
		t.Fatal(ls.err)
	}
	if got := names(ls.rest[:3]); !slices.Equal(got, []string{".claim.z", ".done.a", ".done.b"}) {
		t.Errorf("first three = %v, want the oldest, equal mtimes by name", got)
	}
	if len(ls.rest) != chunk+8 {
		t.Fatalf("listed %d markers, want %d (state.json and .tmp-x are not markers)", len(ls.rest), chunk+8)
	}
	first := slices.Clone(ls.rest[:chunk])
	// Take the first chunk by hand, as next does without examining.
	ls.rest = ls.rest[chunk:]
	for _, p := range first {
		os.Remove(filepath.Join(dir, p.name))
	}
	touch(t, dir, ".done.late", t0.Add(2*time.Hour))
	ls.list() // fewer than a chunk left: read again
	if got := names(ls.rest); len(got) != 9 || got[8] != ".done.late" {
		t.Errorf("after the second list: %v, want the 8 left and .done.late last", got)
	}
	ls.lists = maxLists
	touch(t, dir, ".done.later", t0.Add(3*time.Hour))
	ls.list()
	if slices.Contains(names(ls.rest), ".done.later") {
		t.Errorf("listed again past maxLists")
	}
}

// A burst larger than a chunk is taken in chunks of consecutive sequence
// numbers, in drop order, each chunk one record file; the state is written
// once, when no marker is left; markers dropped while it works join it.
func TestTakesBurstInChunks(t *testing.T) {
	t.Parallel()
	dir, ws, d := executingTask(t, 100)
	const n = 2*chunk + 6
	for i := 1; i <= n; i++ {
		completeSubtask(t, ws, "t1", fmt.Sprintf("st_%d", i), "w1")
	}
	backupsBefore := countBackups(t, dir, "t1")
	o := process(t, d, "t1")
	if o.Taken != n {
		t.Fatalf("took %d markers, want %d", o.Taken, n)
	}
	st, err := ws.ReadState(t.Context(), "t1")
	if err != nil {
		t.Fatal(err)
	}
	if st.JournalSeq != n+2 {
		t.Errorf("journal_seq = %d, want %d", st.JournalSeq, n+2)
	}
	for i := 1; i <= n; i++ {
		if s := st.Subtasks[fmt.Sprintf("st_%d", i)]; s == nil || s.Status != "completed" {
			t.Errorf("st_%d = %+v, want completed", i, s)
		}
	}
	// One record file per chunk, in order.
	entries, err := os.ReadDir(filepath.Join(dir, "tasks", "t1", JournalDir))
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		// Taken markers aside.
		if !strings.Contains(e.Name(), takenInfix) && !strings.HasPrefix(e.Name(), ".") {
			files = append(files, e.Name())
		}
	}
	want := []string{RecordName(1), RecordName(2), BatchName(3, chunk+2), BatchName(chunk+3, 2*chunk+2), BatchName(2*chunk+3, n+2)}
	if !slices.Equal(files, want) {
		t.Errorf("journal files = %v, want %v", files, want)
	}
	for i, r := range readJournal(t, ws, "t1") {
		if i >= 2 && r.Marker.SubtaskID != fmt.Sprintf("st_%d", i-1) {
			t.Errorf("record %d is %s, want st_%d: not in drop order", r.Seq, r.Marker.SubtaskID, i-1)
		}
	}
	// One state write, backed up; the backups are pruned when the burst
	// settles.
	if got := countBackups(t, dir, "t1") - backupsBefore; got != 1 {
		t.Errorf("%d backups added, want 1 (one state write for the burst)", got)
	}
	settleAll(t, d)
	if got, keep := countBackups(t, dir, "t1"), ws.Settings().Backups.Keep; got > keep {
		t.Errorf("%d backups after settle, want at most %d", got, keep)
	}
	checkSettled(t, ws, "t1", st)
}

// A burst of more markers than one commit takes has its state written
// every commit, not only at its end.
func TestWritesStateEveryCommit(t *testing.T) {
	t.Parallel()
	dir, ws, d := executingTask(t, testMax+chunk)
	const n = testMax + chunk
	for i := 1; i <= n; i++ {
		completeSubtask(t, ws, "t1", fmt.Sprintf("st_%d", i), "w1")
	}
	backupsBefore := countBackups(t, dir, "t1")
	if o := process(t, d, "t1"); o.Taken != n {
		t.Fatalf("took %d markers, want %d", o.Taken, n)
	}
	if got := countBackups(t, dir, "t1") - backupsBefore; got != 2 {
		t.Errorf("%d backups added, want 2 (a state write after %d markers, and one at the end)", got, testMax)
	}
	st, err := ws.ReadState(t.Context(), "t1")
	if err != nil {
		t.Fatal(err)
	}
	if st.JournalSeq != n+2 {
		t.Errorf("journal_seq = %d, want %d", st.JournalSeq, n+2)
	}
}

func countBackups(t *testing.T, dir, id string) int {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, "tasks", id, "backups"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return len(entries)
}

// Taken markers and backups beyond backups.keep stay until the burst
// settles; settle then leaves the journal settled and backups/ pruned, and
// nothing to do.
func TestSettle(t *testing.T) {
	t.Parallel()
	dir, ws, d := executingTask(t, 100)
	keep := ws.Settings().Backups.Keep
	taken := func() []string {
		entries, err := os.ReadDir(filepath.Join(dir, "tasks", "t1", JournalDir))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range entries {
			if strings.Contains(e.Name(), takenInfix) {
				out = append(out, e.Name())
			}
		}
		return out
	}
	// One marker a chunk, so that each chunk adds a backup.
	n := keep + 4
	for i := 1; i <= n; i++ {
		completeSubtask(t, ws, "t1", fmt.Sprintf("st_%d", i), "w1")
		process(t, d, "t1")
	}
	n += 2 // the plan's proposal and its review
	if got := len(taken()); got != n {
		t.Errorf("before settle: %d taken markers, want all %d", got, n)
	}
	if got := countBackups(t, dir, "t1"); got <= keep {
		t.Errorf("before settle: backups/ holds %d, want more than %d", got, keep)
	}
	if !settleAll(t, d) {
		t.Fatal("nothing to settle after a burst")
	}
	if got := taken(); len(got) != 0 {
		t.Errorf("settle left %v", got)
	}
	if got := countBackups(t, dir, "t1"); got > keep {
		t.Errorf("settle left %d backups, want at most %d", got, keep)
	}
	if settleAll(t, d) {
		t.Error("settle left work for later")
	}
	st, err := ws.ReadState(t.Context(), "t1")
	if err != nil {
		t.Fatal(err)
	}
	checkSettled(t, ws, "t1", st)
}

// A wake that names markers looks only at those: finding them gone must
// not mark the directory quiet while another marker waits there for its
// grace period, or the rescan that comes for it would pass it by.
func TestNamedWakeLeavesWaitingMarker(t *testing.T) {
	t.Parallel()
	dir, ws, d := executingTask(t, 3)
	td := filepath.Join(dir, "tasks", "t1")
	touch(t, td, ".done.w2.half", time.Now()) // young and unreadable: it waits
	o := process(t, d, "t1")
	if o.Taken != 0 || o.WaitUntil.IsZero() {
		t.Fatalf("young unreadable marker: taken %d, wait till %v; want it waiting", o.Taken, o.WaitUntil)
	}
	claim, err := ws.WriteClaim(t.Context(), "t1", "w1", "st_1")
	if err != nil {
		t.Fatal(err)
	}
	named := workspace.CommitRequest{Max: testMax, Markers: []string{filepath.Base(claim)}}
	for range 2 { // takes the claim, then finds it gone
		if _, err := d.taskOf("t1").Commit(context.Background(), named); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(td, ".done.w2.half"), old, old); err != nil {
		t.Fatal(err)
	}
	if o := process(t, d, "t1"); o.Taken != 1 {
		t.Fatalf("after its grace period the waiting marker was not taken (taken %d)", o.Taken)
	}
}
