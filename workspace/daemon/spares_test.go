package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// spareFiles lists the spares on disk of task t1: state.json's temporary
// files in the task directory and the record files' in journal/, by
// inode.
func spareFiles(t *testing.T, dir string) (state, records map[uint64]string) {
	t.Helper()
	list := func(d string, is func(string) bool) map[uint64]string {
		entries, err := os.ReadDir(d)
		if err != nil {
			t.Fatal(err)
		}
		out := map[uint64]string{}
		for _, e := range entries {
			if is(e.Name()) {
				out[inode(t, filepath.Join(d, e.Name()))] = e.Name()
			}
		}
		return out
	}
	td := filepath.Join(dir, "tasks", "t1")
	isRecordSpare := func(n string) bool { return strings.HasPrefix(n, spareRecordPrefix) }
	return list(td, isStateTemp), list(filepath.Join(td, JournalDir), isRecordSpare)
}

func inode(t *testing.T, p string) uint64 {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// taskWithSpares is executingTask with a burst of two markers taken, so
// that the task holds its spares, listed as by spareFiles.
func taskWithSpares(t *testing.T) (dir string, ws *workspace.Workspace, d *Daemon, state, records map[uint64]string) {
	t.Helper()
	dir, ws, d = executingTask(t, 10)
	burst2(t, ws, d, "st_1", "st_2")
	state, records = spareFiles(t, dir)
	if len(state) != sparesPerTask || len(records) != sparesPerTask {
		t.Fatalf("after a burst: %d state spares and %d record spares, want %d of each", len(state), len(records), sparesPerTask)
	}
	return dir, ws, d, state, records
}

// burst2 completes two subtasks and has d take them in one go.
func burst2(t *testing.T, ws *workspace.Workspace, d *Daemon, a, b string) {
	t.Helper()
	completeSubtask(t, ws, "t1", a, "w1")
	completeSubtask(t, ws, "t1", b, "w2")
	if o := process(t, d, "t1"); o.taken != 2 {
		t.Fatalf("took %d markers, want 2", o.taken)
	}
}

// Once a burst is taken the task has its spares, and the next write of
// state.json and of a record file goes into them; they are made again,
// and a forgotten task has none left on disk.
func TestSparesCarryTheNextBurst(t *testing.T) {
	dir, ws, d, state, records := taskWithSpares(t)
	for ino, name := range records {
		if fi, err := os.Stat(filepath.Join(dir, "tasks", "t1", JournalDir, name)); err != nil || fi.Size() != 0 || !fi.Mode().IsRegular() {
			t.Errorf("record spare %s (inode %d): %v, %v; want an empty regular file", name, ino, fi, err)
		}
	}

	completeSubtask(t, ws, "t1", "st_3", "w1")
	process(t, d, "t1")
	td := filepath.Join(dir, "tasks", "t1")
	if _, ok := state[inode(t, filepath.Join(td, "state.json"))]; !ok {
		t.Errorf("state.json is not one of the spares %v", state)
	}
	if _, ok := records[inode(t, filepath.Join(td, JournalDir, RecordName(5)))]; !ok {
		t.Errorf("record file %s is not one of the spares %v", RecordName(5), records)
	}
	st, err := ws.ReadState("t1")
	if err != nil {
		t.Fatal(err)
	}
	if s := st.Subtasks["st_3"]; s == nil || s.Status != "completed" || st.JournalSeq != 5 {
		t.Errorf("state after the burst: st_3 %+v, journal_seq %d; want completed, 5", s, st.JournalSeq)
	}
	if recs := readJournal(t, ws, "t1"); len(recs) != 5 || recs[4].Marker.SubtaskID != "st_3" {
		t.Errorf("journal holds %d records, the last %+v; want 5, the last for st_3", len(recs), recs[len(recs)-1].Marker)
	}
	state2, records2 := spareFiles(t, dir)
	if len(state2) != sparesPerTask || len(records2) != sparesPerTask {
		t.Errorf("after the next burst: %d and %d spares, want %d of each", len(state2), len(records2), sparesPerTask)
	}

	d.forget("t1")
	if state, records := spareFiles(t, dir); len(state)+len(records) != 0 {
		t.Errorf("a forgotten task keeps spares %v %v", state, records)
	}
}

// At most spareTasks tasks hold spares. When all were filled lately a
// new task goes without; one left unfilled for spareIdle gives way, and
// its files are removed.
func TestSpareSetsCapped(t *testing.T) {
	dir, _ := newWorkspace(t)
	d := newDaemon(t, dir)
	ids := make([]string, spareTasks+1)
	for i := range ids {
		ids[i] = fmt.Sprintf("t%d", i+1)
		if err := os.MkdirAll(filepath.Join(dir, "tasks", ids[i], JournalDir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	count := func(id string) int {
		entries, err := os.ReadDir(filepath.Join(dir, "tasks", id, JournalDir))
		if err != nil {
			t.Fatal(err)
		}
		return len(entries)
	}
	for _, id := range ids[:spareTasks] {
		d.fillSpares(id)
	}
	last := ids[spareTasks]
	d.fillSpares(last)
	if n := count(last); n != 0 || len(d.spares.sets) != spareTasks {
		t.Errorf("with %d sets filled lately: the next task got %d spares, %d sets held; want 0 and %d", spareTasks, n, len(d.spares.sets), spareTasks)
	}
	d.spares.sets[ids[0]].filled = time.Now().Add(-spareIdle)
	d.fillSpares(last)
	if n := count(last); n != sparesPerTask {
		t.Errorf("after the oldest set went idle: the next task got %d record spares, want %d", n, sparesPerTask)
	}
	if n := count(ids[0]); n != 0 || d.spares.sets[ids[0]] != nil {
		t.Errorf("the idle set gave way but %d of its files are left (held: %v)", n, d.spares.sets[ids[0]] != nil)
	}
}

// A spare replaced by someone else is not renamed into place: the write
// falls back to a file of its own, and the state and journal are right.
func TestSpareReplacedIsNotUsed(t *testing.T) {
	dir, ws, d, state, records := taskWithSpares(t)
	td := filepath.Join(dir, "tasks", "t1")
	for _, name := range state {
		p := filepath.Join(td, name)
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("task.json", p); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range records {
		p := filepath.Join(td, JournalDir, name)
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("not a record"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	completeSubtask(t, ws, "t1", "st_3", "w1")
	process(t, d, "t1")
	fi, err := os.Lstat(filepath.Join(td, "state.json"))
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("state.json: %v, %v; want a regular file", fi, err)
	}
	st, err := ws.ReadState("t1")
	if err != nil {
		t.Fatal(err)
	}
	if s := st.Subtasks["st_3"]; s == nil || s.Status != "completed" {
		t.Errorf("st_3 = %+v, want completed", s)
	}
	recs := readJournal(t, ws, "t1")
	if len(recs) != 5 || recs[4].Marker.SubtaskID != "st_3" {
		t.Errorf("journal holds %d records; want 5, the last for st_3", len(recs))
	}
	if data, err := os.ReadFile(filepath.Join(td, JournalDir, RecordName(5))); err != nil || strings.Contains(string(data), "not a record") {
		t.Errorf("record file %s: %q, %v", RecordName(5), data, err)
	}
	if err := d.settle("t1", true); err != nil {
		t.Fatal(err)
	}
	checkSettled(t, ws, "t1", st)
}

// Spares and temporary files left by a daemon that died are removed when
// the task is next loaded from disk, and the task gets spares anew.
func TestLeftoverSparesRemovedOnLoad(t *testing.T) {
	dir, ws, d, oldState, oldRecords := taskWithSpares(t)
	// The daemon dies: its spares stay on disk, with a temporary file of
	// a write cut short.
	d.spares.sets = map[string]*spareSet{}
	td := filepath.Join(dir, "tasks", "t1")
	if err := os.WriteFile(filepath.Join(td, stateTempPrefix+"4242"), []byte(`{"half`), 0o644); err != nil {
		t.Fatal(err)
	}
	// Someone else's file that only starts like one is not touched.
	if err := os.WriteFile(filepath.Join(td, stateTempPrefix+".orig"), []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}

	d2 := newDaemon(t, dir)
	completeSubtask(t, ws, "t1", "st_3", "w1")
	completeSubtask(t, ws, "t1", "st_4", "w2")
	if o := d2.processTask(context.Background(), "t1", wake{all: true}, true); o.err != nil || o.taken != 2 {
		t.Fatalf("processTask after a restart: took %d, %v", o.taken, o.err)
	}
	state, records := spareFiles(t, dir)
	for ino, name := range oldState {
		if state[ino] == name {
			t.Errorf("leftover state spare %s still there", name)
		}
	}
	for ino, name := range oldRecords {
		if records[ino] == name {
			t.Errorf("leftover record spare %s still there", name)
		}
	}
	if slices.Contains(mapValues(state), stateTempPrefix+"4242") {
		t.Errorf("leftover temporary file %s4242 still there", stateTempPrefix)
	}
	if _, err := os.Stat(filepath.Join(td, stateTempPrefix+".orig")); err != nil {
		t.Errorf("%s.orig, not a temporary file of state.json, was removed: %v", stateTempPrefix, err)
	}
	if len(state) != sparesPerTask || len(records) != sparesPerTask {
		t.Errorf("after the load and a burst: %d and %d spares, want %d of each", len(state), len(records), sparesPerTask)
	}
}

func mapValues(m map[uint64]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func TestIsStateTemp(t *testing.T) {
	for name, want := range map[string]bool{
		".state.json123":  true,
		".state.json-42":  false,
		".state.json":     false,
		".state.json-":    false,
		".state.json.bak": false,
		".state.json12a":  false,
		"state.json123":   false,
		".state.jsonx1":   false,
	} {
		if got := isStateTemp(name); got != want {
			t.Errorf("isStateTemp(%q) = %v, want %v", name, got, want)
		}
	}
}
