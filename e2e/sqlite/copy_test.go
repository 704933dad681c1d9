package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/workspace/sqlite"
)

// claimRun is one agent's claim: its marker and when the process ran.
type claimRun struct {
	task, name string
	start, end time.Time
}

// burst runs agents that drop claims on tasks, each waiting for its
// process, until stop is closed; it returns what they dropped.
func burst(t *testing.T, w *clitest.WS, tasks []string, agents int, stop <-chan struct{}, done *sync.WaitGroup, mu *sync.Mutex, runs *[]claimRun) {
	for a := range agents {
		done.Add(1)
		go func() {
			defer done.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				task := tasks[(a+i)%len(tasks)]
				start := time.Now()
				r, err := clitest.Exec(w.Dir, w.Env, "", "claim", "--task", task, "--agent", fmt.Sprintf("agent_%d", a), "--subtask", fmt.Sprintf("s%d", i))
				end := time.Now()
				if err != nil || r.Code != 0 {
					t.Errorf("claim: %v %v", r, err)
					return
				}
				mu.Lock()
				*runs = append(*runs, claimRun{task: task, name: path.Base(strings.TrimSpace(r.Stdout)), start: start, end: end})
				mu.Unlock()
			}
		}()
	}
}

// copyView is what a copy holds: per task, its journal's names and last
// seq, its state's journal_seq, and the markers still waiting.
type copyView struct {
	journal  map[string]map[string]bool
	lastSeq  map[string]int64
	stateSeq map[string]int64
	markers  map[string]map[string]bool
}

func (v copyView) has(task, name string) bool { return v.journal[task][name] || v.markers[task][name] }

// readCopy checks the copy's integrity and reads it as of one moment.
func readCopy(t *testing.T, file string) copyView {
	t.Helper()
	s, err := sqlite.Open(context.Background(), "sqlite:"+file)
	if err != nil {
		t.Fatalf("open the copy: %v", err)
	}
	defer s.Close()
	db := s.DB()
	var ok string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&ok); err != nil || ok != "ok" {
		t.Fatalf("integrity_check of %s: %q %v", file, ok, err)
	}
	// One read transaction: a served copy's daemon commits between the
	// reads otherwise (a journal read before a commit, its markers after).
	tx, err := db.BeginTx(context.Background(), &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	v := copyView{journal: map[string]map[string]bool{}, lastSeq: map[string]int64{}, stateSeq: map[string]int64{}, markers: map[string]map[string]bool{}}
	each := func(q string, f func(task string, name string, n int64)) {
		rows, err := tx.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var task, name string
			var n int64
			if err := rows.Scan(&task, &name, &n); err != nil {
				t.Fatal(err)
			}
			f(task, name, n)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	}
	add := func(m map[string]map[string]bool, task, name string) {
		if m[task] == nil {
			m[task] = map[string]bool{}
		}
		m[task][name] = true
	}
	each("SELECT task_id, name, seq FROM journal ORDER BY task_id, seq", func(task, name string, seq int64) {
		if seq != v.lastSeq[task]+1 {
			t.Errorf("copy %s: journal of %s jumps from seq %d to %d", file, task, v.lastSeq[task], seq)
		}
		v.lastSeq[task] = seq
		add(v.journal, task, name)
	})
	each("SELECT task_id, '', journal_seq FROM states", func(task, _ string, seq int64) { v.stateSeq[task] = seq })
	each("SELECT task_id, name, id FROM markers", func(task, name string, _ int64) {
		if v.journal[task][name] {
			t.Errorf("copy %s: marker %s of %s is both journaled and waiting", file, name, task)
		}
		add(v.markers, task, name)
	})
	return v
}

// TestCopyDuringBurst: `workspaced copy` of a database the daemon serves
// while agents drop claims as fast as they can. Each copy passes
// integrity_check and is one moment of the workspace: a task's state is
// at its journal's last seq, no marker is both journaled and waiting,
// every claim that finished before the copy began is in it (journaled or
// waiting), none that began after it ended is. The copy opens as a
// workspace, and a daemon serving it takes the markers it holds.
func TestCopyDuringBurst(t *testing.T) {
	t.Parallel()
	w, _ := clitest.NewSQLite(t)
	tasks := []string{"t1", "t2", "t3"}
	for _, id := range tasks {
		w.Task(id)
	}
	w.Serve()
	var (
		mu   sync.Mutex
		runs []claimRun
		wg   sync.WaitGroup
	)
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(runs) }
	waitFor := func(n int) {
		for deadline := time.Now().Add(60 * time.Second); count() < n; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("only %d claims after 60 s", count())
			}
		}
	}
	stop := make(chan struct{})
	burst(t, w, tasks, 4, stop, &wg, &mu, &runs)
	// The burst ends once the claims are counted (or the test fails
	// before): the checks below read copies and the claims counted, and
	// agents going on beside them would only take the CPU they wait for.
	endBurst := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer endBurst()

	dir := t.TempDir()
	type copied struct {
		file       string
		start, end time.Time
	}
	var copies []copied
	for i := range 3 {
		waitFor(count() + 15)
		c := copied{file: filepath.Join(dir, fmt.Sprintf("copy%d.db", i)), start: time.Now()}
		out := w.Ok("copy", "--to", c.file)
		c.end = time.Now()
		if !strings.Contains(out, "integrity ok") {
			t.Errorf("copy printed %q", out)
		}
		copies = append(copies, c)
	}
	waitFor(count() + 15)
	endBurst()
	all := append([]claimRun(nil), runs...)

	// The copy holding the most waiting markers is served below.
	last, most := "", -1
	for _, c := range copies {
		v := readCopy(t, c.file)
		var before, after, in int
		for _, r := range all {
			switch {
			case r.end.Before(c.start):
				before++
				if !v.has(r.task, r.name) {
					t.Errorf("%s: claim %s of %s finished before the copy began and is not in it", c.file, r.name, r.task)
				}
			case r.start.After(c.end):
				after++
				if v.has(r.task, r.name) {
					t.Errorf("%s: claim %s of %s began after the copy ended and is in it", c.file, r.name, r.task)
				}
			}
			if v.has(r.task, r.name) {
				in++
			}
		}
		for _, id := range tasks {
			if v.stateSeq[id] != v.lastSeq[id] {
				t.Errorf("%s: state of %s at journal_seq %d, its journal ends at %d", c.file, id, v.stateSeq[id], v.lastSeq[id])
			}
		}
		if before == 0 || after == 0 {
			t.Errorf("%s: %d claims before it, %d after: the copy was not taken during the burst", c.file, before, after)
		}
		waiting := 0
		for _, m := range v.markers {
			waiting += len(m)
		}
		if waiting > most {
			last, most = c.file, waiting
		}
		t.Logf("%s: %d claims in it, %d of them still waiting (%d finished before it, %d began after)", filepath.Base(c.file), in, waiting, before, after)
	}

	// A copy is a workspace: the usual reads, and its own daemon journals
	// the markers it holds.
	v := readCopy(t, last)
	cw := clitest.At(t, "sqlite:"+last)
	if list := cw.Ok("task", "list"); !strings.Contains(list, "t1") || !strings.Contains(list, "t3") {
		t.Errorf("task list of the copy:\n%s", list)
	}
	var state struct {
		JournalSeq int64 `json:"journal_seq"`
	}
	clitest.Decode(t, cw.Ok("state", "show", "--task", "t1", "--json"), &state)
	if state.JournalSeq != v.lastSeq["t1"] {
		t.Errorf("state show on the copy: journal_seq %d, its journal ends at %d", state.JournalSeq, v.lastSeq["t1"])
	}
	cw.Serve()
	pending := func(v copyView) (n int) {
		for _, m := range v.markers {
			n += len(m)
		}
		return n
	}
	if pending(v) == 0 {
		t.Logf("no copy holds a waiting marker: the daemon took every claim at once")
	}
	got := readCopy(t, last)
	for deadline := time.Now().Add(60 * time.Second); pending(got) > 0; got = readCopy(t, last) {
		if time.Now().After(deadline) {
			t.Fatalf("the copy's daemon has not taken its %d markers after 60 s", pending(got))
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, id := range tasks {
		if want := v.lastSeq[id] + int64(len(v.markers[id])); got.lastSeq[id] != want || got.stateSeq[id] != want {
			t.Errorf("served copy: %s's journal ends at %d, its state at %d; want %d (%d records and %d markers)",
				id, got.lastSeq[id], got.stateSeq[id], want, v.lastSeq[id], len(v.markers[id]))
		}
	}
}

// TestCopyRefusals: what copy refuses, each with the exit code its help
// names, and nothing left behind.
func TestCopyRefusals(t *testing.T) {
	t.Parallel()
	w, db := clitest.NewSQLite(t)
	w.Task("t1")
	dir := t.TempDir()
	target := filepath.Join(dir, "c.db")
	w.Fails(2, "--to FILE is required", "copy")
	w.Ok("copy", "--to", "sqlite:"+target)
	w.Fails(4, "--force", "copy", "--to", target)
	w.Task("t2")
	w.Ok("copy", "--to", target, "--force")
	if list := clitest.At(t, "sqlite:"+target).Ok("task", "list"); !strings.Contains(list, "t2") {
		t.Errorf("--force did not replace the copy:\n%s", list)
	}
	// A target in use: its log would be replayed into the new file.
	if err := os.WriteFile(target+"-wal", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	w.Fails(4, "-wal exists", "copy", "--to", target, "--force")
	if err := os.Remove(target + "-wal"); err != nil {
		t.Fatal(err)
	}
	clitest.At(t, "sqlite:"+target).Serve()
	w.Fails(4, "copy to "+target, "copy", "--to", target, "--force")

	w.Fails(1, "being copied", "copy", "--to", db)
	w.Fails(1, "export", "--root", t.TempDir(), "copy", "--to", filepath.Join(dir, "d.db"))
	w.Fails(3, "init", "copy", "--from", "sqlite:"+filepath.Join(dir, "none.db"), "--to", filepath.Join(dir, "e.db"))
	migratedByNewer(t, w.Root)
	w.Fails(1, "newer", "copy", "--to", filepath.Join(dir, "f.db"))
	for _, name := range []string{"d.db", "e.db", "f.db"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("a refused copy left %s: %v", name, err)
		}
	}
	if tmp, _ := filepath.Glob(filepath.Join(dir, ".*.tmp-*")); len(tmp) > 0 {
		t.Errorf("temporary files left: %v", tmp)
	}
}
