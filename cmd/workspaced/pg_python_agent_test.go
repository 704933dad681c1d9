package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/internal/optdep"
	"github.com/workspaced/workspaced/workspace"
)

// psycopg2Python is a python3 that imports psycopg2: the one on PATH,
// else Debian's /usr/bin/python3 (a python3 of pyenv or a virtualenv
// often lacks the Debian package); the test is skipped without one.
func psycopg2Python(t *testing.T) string {
	t.Helper()
	var tried []string
	for _, name := range []string{"python3", "/usr/bin/python3"} {
		p, err := exec.LookPath(name)
		if err != nil {
			continue
		}
		tried = append(tried, p)
		if exec.Command(p, "-c", "import psycopg2").Run() == nil {
			return p
		}
	}
	optdep.Skipf(t, "psycopg2", "no python3 that imports psycopg2 (tried %v): install python3-psycopg2", tried)
	return ""
}

// TestPythonPostgresHivemindWorkers: Python workers on psycopg2, as
// processes, play the Hivemind worker against `workspaced serve` on
// PostgreSQL with only the SQL of PROTOCOL.md; the task completes, and
// every subtask was finished exactly once, by the one worker whose claim
// won.
func TestPythonPostgresHivemindWorkers(t *testing.T) {
	py := psycopg2Python(t)
	w := newPGWS(t)
	const subs, workers = 24, 4
	w.plan("hive", subs)
	w.Start()
	script, err := filepath.Abs(filepath.Join(agentsDir, "python", "pg_hivemind_worker.py"))
	if err != nil {
		t.Fatal(err)
	}
	finished := map[string][]string{} // subtask → the workers that say they finished it
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range workers {
		agent := fmt.Sprintf("pg_w%d", i)
		cmd := exec.Command(py, script, "--root", w.Root, "--task", "hive", "--agent", agent, "--timeout", "90", "--work-delay", "0.02")
		cmd.Env = clitest.CleanEnv()
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := cmd.Wait(); err != nil {
				t.Errorf("%s: %v\nstdout: %s\nstderr: %s", agent, err, out.String(), errb.String())
				return
			}
			line, ok := strings.CutPrefix(strings.TrimSpace(out.String()), agent+" finished ")
			if !ok {
				t.Errorf("%s printed %q", agent, out.String())
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, s := range strings.Fields(line) {
				if s != "nothing" {
					finished[s] = append(finished[s], agent)
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	st, err := w.s.ReadState(t.Context(), "hive")
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != "completed" {
		t.Fatalf("task status %s after the workers stopped", st.Status)
	}
	recs, err := w.s.ReadJournal(t.Context(), "hive")
	if err != nil {
		t.Fatal(err)
	}
	// Done records per subtask, by agent; claims refused (lost) counted.
	dones := map[string][]string{}
	refused := map[int64]bool{}
	for _, e := range st.Errors {
		refused[e.Seq] = true
	}
	lost := 0
	for _, r := range recs {
		if r.Rejected != "" {
			t.Errorf("record %d (%s) rejected: %s", r.Seq, r.File, r.Rejected)
		}
		switch {
		case r.Kind == workspace.KindClaim && refused[r.Seq]:
			lost++
		case r.Kind == workspace.KindDone && r.Marker.SubtaskID != "":
			if refused[r.Seq] {
				t.Errorf("done marker %s for %s refused: %v", r.File, r.Marker.SubtaskID, st.Errors)
			}
			dones[r.Marker.SubtaskID] = append(dones[r.Marker.SubtaskID], r.Marker.AgentID)
		}
	}
	for i := range subs {
		id := fmt.Sprintf("s%d", i)
		ss := st.Subtasks[id]
		if ss == nil || ss.Status != "completed" {
			t.Errorf("subtask %s: %+v", id, ss)
			continue
		}
		if got := finished[id]; len(got) != 1 || got[0] != ss.Worker {
			t.Errorf("subtask %s completed by %s in the state, the workers say %v finished it", id, ss.Worker, got)
		}
		if got := dones[id]; !slices.Equal(got, []string{ss.Worker}) {
			t.Errorf("subtask %s: done markers journaled from %v, want one from %s", id, got, ss.Worker)
		}
		body, err := w.productBody("hive", "outputs/"+id+".json")
		if err != nil || !strings.Contains(body, `"worker_id": "`+ss.Worker+`"`) {
			t.Errorf("outputs/%s.json: %q, %v (want it written by %s)", id, body, err, ss.Worker)
		}
	}
	if len(finished) != subs {
		t.Errorf("the workers finished %d subtasks, want %d", len(finished), subs)
	}
	t.Logf("%d workers, %d subtasks, %d journal records, %d claims lost to another worker", workers, subs, len(recs), lost)
}

// productBody reads a product's stored bytes.
func (w *pgws) productBody(task, path string) (string, error) {
	var body string
	err := w.s.Pool().QueryRow(context.Background(), "SELECT body FROM products WHERE task_id = $1 AND path = $2", task, path).Scan(&body)
	return body, err
}
