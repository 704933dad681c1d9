package sqlite_test

import (
	"bytes"
	"context"
	"encoding/json"
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
	"github.com/workspaced/workspaced/workspace/postgres"
	"github.com/workspaced/workspaced/workspace/sqlite"
)

// agentsDir holds the example agents, from this package's directory.
const agentsDir = "../../examples/agents"

// need returns the path of program, skipping the test (through optdep,
// as dep) without it.
func need(t *testing.T, program, dep, how string) string {
	t.Helper()
	find := exec.LookPath
	if program == "python3" {
		find = func(string) (string, error) { return clitest.Python3() } // past any shim
	}
	p, err := find(program)
	if err != nil {
		optdep.Skipf(t, dep, "%s is not on PATH: %s", program, how)
	}
	return p
}

func script(t *testing.T, rel string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join(agentsDir, rel))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// approvedPlan creates task id with a plan of the given subtasks, proposed
// and approved through the CLI, as the README's walkthrough does.
func approvedPlan(w *clitest.WS, id string, subs []string) {
	w.T.Helper()
	w.Task(id)
	type subtask struct {
		ID          string `json:"id"`
		Description string `json:"description"`
	}
	plan := struct {
		Summary  string    `json:"summary"`
		Subtasks []subtask `json:"subtasks"`
	}{Summary: "independent pieces"}
	for _, s := range subs {
		plan.Subtasks = append(plan.Subtasks, subtask{s, "piece " + s})
	}
	data, _ := json.Marshal(plan)
	if r := w.RunIn(string(data), "plan", "write", "--task", id, "--agent", "orchestrator", "--file", "-", "--propose"); r.Code != 0 {
		w.T.Fatalf("plan write: %v", r)
	}
	if r := w.RunIn(`{"type":"plan_review","verdict":"approved"}`, "review", "write", "--task", id, "--id", "plan_v1",
		"--agent", "reviewer", "--file", "-", "--done"); r.Code != 0 {
		w.T.Fatalf("review write: %v", r)
	}
}

func subtasks(n int) []string {
	var ids []string
	for i := range n {
		// Ids with the characters an id may hold beyond letters and digits.
		ids = append(ids, fmt.Sprintf([]string{"s%d", "s.%d", "s-%d"}[i%3], i))
	}
	return ids
}

// runWorkers starts the workers (agent → command line), waits for all,
// and returns subtask → the workers that printed it as finished. A worker
// that fails, or prints anything but "<agent> finished …", fails t.
func runWorkers(t *testing.T, workers map[string][]string) map[string][]string {
	t.Helper()
	finished := map[string][]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for agent, argv := range workers {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append(clitest.CleanEnv(), "PYTHONPATH="+script(t, "../../clients/python/src"))
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := cmd.Wait()
			line, ok := strings.CutPrefix(strings.TrimSpace(out.String()), agent+" finished ")
			if err != nil || !ok || errb.Len() > 0 {
				t.Errorf("%s: %v\nstdout: %s\nstderr: %s", agent, err, out.String(), errb.String())
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
	return finished
}

// checkFinished: the task is completed; every subtask was finished once,
// by the worker the state names, whose claim won, whose one done marker
// was applied and whose output is outputs/<id>.json. It returns the
// outputs by subtask.
func checkFinished(t *testing.T, w *clitest.WS, task string, subs []string, finished map[string][]string) map[string]map[string]any {
	t.Helper()
	s, productBody := storeOf(t, w.Root)
	st, err := s.ReadState(t.Context(), task)
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != "completed" {
		t.Fatalf("task status %s after the workers stopped", st.Status)
	}
	recs, err := s.ReadJournal(t.Context(), task)
	if err != nil {
		t.Fatal(err)
	}
	refused := map[int64]bool{}
	for _, e := range st.Errors {
		refused[e.Seq] = true
	}
	dones, lost := map[string][]string{}, 0
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
	outputs := map[string]map[string]any{}
	for _, id := range subs {
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
		var out map[string]any
		body, err := productBody(task, "outputs/"+id+".json")
		if err == nil {
			err = json.Unmarshal([]byte(body), &out)
		}
		if err != nil || out["worker_id"] != ss.Worker || out["subtask_id"] != id {
			t.Errorf("outputs/%s.json: %v, %v (want it written by %s)", id, out, err, ss.Worker)
		}
		outputs[id] = out
	}
	if len(finished) != len(subs) {
		t.Errorf("the workers finished %d subtasks, want %d", len(finished), len(subs))
	}
	t.Logf("%d subtasks, %d journal records, %d claims lost to another worker", len(subs), len(recs), lost)
	return outputs
}

// storeReader is what checkFinished reads of a store.
type storeReader interface {
	ReadState(ctx context.Context, id string) (workspace.State, error)
	ReadJournal(ctx context.Context, id string) ([]workspace.JournalRecord, error)
}

// storeOf opens the store of root, a sqlite: or postgres:// one, closed
// by the test's cleanup, with a reader of a product's stored bytes.
func storeOf(t *testing.T, root string) (storeReader, func(task, path string) (string, error)) {
	t.Helper()
	const q = "SELECT body FROM products WHERE task_id = $1 AND path = $2"
	if sqlite.IsURL(root) {
		s := openStore(t, root)
		return s, func(task, path string) (body string, err error) {
			return body, s.DB().QueryRow(q, task, path).Scan(&body)
		}
	}
	s, err := postgres.Open(t.Context(), root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, func(task, path string) (body string, err error) {
		return body, s.Pool().QueryRow(context.Background(), q, task, path).Scan(&body)
	}
}

// psycopgPython is a python3 that imports psycopg (3), which the package
// workspaced takes for PostgreSQL: the one on PATH, else Debian's
// /usr/bin/python3 (a python3 of pyenv or a virtualenv often lacks the
// Debian package); the test is skipped without one.
func psycopgPython(t *testing.T) string {
	t.Helper()
	var tried []string
	for _, find := range []func() (string, error){clitest.Python3, func() (string, error) { return exec.LookPath("/usr/bin/python3") }} {
		p, err := find()
		if err != nil {
			continue
		}
		tried = append(tried, p)
		if exec.Command(p, "-c", "import psycopg").Run() == nil {
			return p
		}
	}
	optdep.Skipf(t, "psycopg", "no python3 that imports psycopg (tried %v): install python3-psycopg", tried)
	return ""
}

// TestPythonHivemindWorkers: four Python workers, as processes, play the
// Hivemind worker against `workspaced serve` on the package workspaced:
// on a sqlite: root with the standard library's sqlite3, on PostgreSQL
// with psycopg 3. The task completes, and every subtask was finished
// exactly once, by the one worker whose claim won.
func TestPythonHivemindWorkers(t *testing.T) {
	t.Parallel()
	for _, store := range []struct {
		name, worker, agent string
		python              func(t *testing.T) string
		ws                  func(t *testing.T) *clitest.WS
	}{
		{"sqlite", "python/hivemind_worker.py", "py_%d",
			func(t *testing.T) string { return need(t, "python3", "python3", "the Python worker cannot be tried") },
			func(t *testing.T) *clitest.WS { w, _ := clitest.NewSQLite(t); return w }},
		{"postgres", "python/hivemind_worker.py", "pg_w%d", psycopgPython,
			func(t *testing.T) *clitest.WS { return clitest.At(t, pgRoot(t)) }},
	} {
		t.Run(store.name, func(t *testing.T) {
			t.Parallel()
			py := store.python(t)
			w := store.ws(t)
			subs := subtasks(24)
			approvedPlan(w, "hive", subs)
			w.Serve()
			workers := map[string][]string{}
			for i := range 4 {
				agent := fmt.Sprintf(store.agent, i)
				workers[agent] = []string{py, script(t, store.worker), "--root", w.Root,
					"--task", "hive", "--agent", agent, "--timeout", "120", "--work-delay", "0.02"}
			}
			checkFinished(t, w, "hive", subs, runWorkers(t, workers))
		})
	}
}

// TestShellSQLiteWorkers: two workers on the sqlite3 shell and one in
// Python finish a plan together. One shell worker adds a note full of
// quotes, a newline, a backslash and SQL to its summaries: it reaches the
// outputs byte for byte. The shell workers' read-modify-write of the env
// entry shell_progress, with its version check, loses nothing. The
// Python worker takes half a second a subtask, so that the shell workers,
// slower at each step, finish a share.
func TestShellSQLiteWorkers(t *testing.T) {
	t.Parallel()
	sh := need(t, "sh", "sh", "the shell worker cannot be tried")
	need(t, "sqlite3", "sqlite3", "install Debian's sqlite3 package")
	py := need(t, "python3", "python3", "the Python worker cannot be tried")
	w, _ := clitest.NewSQLite(t)
	subs := subtasks(12)
	approvedPlan(w, "hive", subs)
	w.Serve()
	const note = "it's \"quoted\"; DROP TABLE tasks; --\nline two \\ ' '' end"
	worker := script(t, "sh/sqlite_worker.sh")
	finished := runWorkers(t, map[string][]string{
		"sh_1": {sh, worker, w.Root, "hive", "sh_1", "120", note},
		"sh_2": {sh, worker, w.Root, "hive", "sh_2", "120"},
		"py_1": {py, script(t, "python/hivemind_worker.py"), "--root", w.Root, "--task", "hive",
			"--agent", "py_1", "--timeout", "120", "--work-delay", "0.5"},
	})
	outputs := checkFinished(t, w, "hive", subs, finished)
	var bySh []string
	for _, id := range subs {
		switch out := outputs[id]; out["worker_id"] {
		case "sh_1":
			if want := "done by sh_1: " + note; out["summary"] != want {
				t.Errorf("outputs/%s.json summary %q, want %q", id, out["summary"], want)
			}
			bySh = append(bySh, id)
		case "sh_2":
			bySh = append(bySh, id)
		}
	}
	var entry struct {
		Version int      `json:"version"`
		Value   []string `json:"value"`
	}
	clitest.Decode(t, w.Ok("env", "get", "--task", "hive", "--key", "shell_progress", "--json"), &entry)
	slices.Sort(entry.Value)
	slices.Sort(bySh)
	if !slices.Equal(entry.Value, bySh) || (len(bySh) > 0 && entry.Version != len(bySh)) {
		t.Errorf("shell_progress: version %d, %v; the shell workers finished %v", entry.Version, entry.Value, bySh)
	}
	t.Logf("the shell workers finished %d of %d subtasks", len(bySh), len(subs))
}
