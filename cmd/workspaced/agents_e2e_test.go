package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/internal/optdep"
	"github.com/workspaced/workspaced/workspace"
)

// The agents in other languages (examples/agents/) are run as they would be
// in production: real processes against a real `workspaced serve`, the
// Python ones on the package workspaced, the shell one knowing only the
// files, the schemas and flock.

const agentsDir = "../../examples/agents"

// agentProc is one agent process and what it printed.
type agentProc struct {
	name     string
	cmd      *exec.Cmd
	out, err bytes.Buffer
}

// finishedBy parses a worker's last line, "<agent> finished st_1 st_5" or
// "<agent> finished nothing".
func (p *agentProc) finished(t *testing.T) []string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(p.out.String()), "\n")
	last := strings.Fields(lines[len(lines)-1])
	if len(last) < 3 || last[0] != p.name || last[1] != "finished" {
		t.Fatalf("%s: last line %q is not \"%s finished ...\"", p.name, lines[len(lines)-1], p.name)
	}
	if last[2] == "nothing" {
		return nil
	}
	return last[2:]
}

func TestAgentsInOtherLanguages(t *testing.T) {
	t.Parallel()
	py, err := clitest.Python3()
	if err != nil {
		optdep.Skip(t, "python3", "python3 is not on PATH: the Python agents cannot run")
	}
	withShell := true
	for _, tool := range []string{"jq", "flock"} {
		if _, err := exec.LookPath(tool); err != nil {
			optdep.Without(t, tool, tool+" is not on PATH: the shell worker is left out")
			withShell = false
		}
	}

	w := newWS(t)
	// A short rescan: a claim that lands after the task finished is taken
	// (and refused) by the next rescan, as finished tasks are not watched.
	srv := w.serve("--rescan", "200ms")
	x := w.Open()

	// A task with an approved plan of 12 independent subtasks.
	const hive, arc, n = "hive", "arc", 12
	w.Task(hive)
	var subtasks []map[string]any
	var ids []string
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("st_%02d", i)
		ids = append(ids, id)
		subtasks = append(subtasks, map[string]any{"id": id, "description": "independent piece " + id, "estimated_complexity": "low"})
	}
	plan, _ := json.Marshal(map[string]any{"summary": "twelve independent pieces", "subtasks": subtasks})
	if r := w.RunIn(string(plan), "plan", "write", "--task", hive, "--agent", "orchestrator", "--file", "-", "--propose"); r.Code != 0 {
		t.Fatalf("plan write: %v", r)
	}
	clitest.StateWhere(t, x, hive, func(st workspace.State) bool { return st.PlanStatus == "proposed" })
	if r := w.RunIn(`{"type":"plan_review","verdict":"approved"}`, "review", "write", "--task", hive, "--id", "plan_v1",
		"--agent", "reviewer", "--file", "-", "--done"); r.Code != 0 {
		t.Fatalf("review write: %v", r)
	}
	clitest.StateWhere(t, x, hive, func(st workspace.State) bool { return st.Status == "executing" })
	w.Task(arc)

	// Two Python workers, a shell worker and the ARC walkthrough, at once.
	pyDir := filepath.Join(agentsDir, "python")
	procs := []*agentProc{
		{name: "py_1", cmd: exec.Command(py, "hivemind_worker.py", "--root", w.Root, "--task", hive, "--agent", "py_1", "--timeout", "90", "--work-delay", "0.2")},
		{name: "py_2", cmd: exec.Command(py, "hivemind_worker.py", "--root", w.Root, "--task", hive, "--agent", "py_2", "--timeout", "90", "--work-delay", "0.2")},
		{name: "arc", cmd: exec.Command(py, "arc_walkthrough.py", "--root", w.Root, "--task", arc)},
	}
	if withShell {
		procs = append(procs, &agentProc{name: "sh_1", cmd: exec.Command("sh", filepath.Join("..", "sh", "worker.sh"), w.Root, hive, "sh_1", "90")})
	}
	// The Python agents import the package workspaced from its source.
	pkgSrc, err := filepath.Abs(filepath.Join("..", "..", "clients", "python", "src"))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, p := range procs {
		p.cmd.Dir = pyDir
		p.cmd.Env = append(clitest.CleanEnv(), "PYTHONPATH="+pkgSrc)
		p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.err
		if err := p.cmd.Start(); err != nil {
			t.Fatalf("start %s: %v", p.name, err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); _ = p.cmd.Wait() }()
	}
	wg.Wait()
	for _, p := range procs {
		if code := p.cmd.ProcessState.ExitCode(); code != 0 || p.err.Len() > 0 {
			t.Fatalf("%s exited %d\nstdout:\n%s\nstderr:\n%s", p.name, code, p.out.String(), p.err.String())
		}
	}

	st := clitest.StateWhere(t, x, hive, func(st workspace.State) bool { return st.Status == "completed" })
	for _, id := range []string{hive, arc} {
		clitest.Eventually(t, "every marker of "+id+" taken", func() (bool, string) {
			ents, err := os.ReadDir(filepath.Join(w.Root, "tasks", id))
			if err != nil {
				return false, err.Error()
			}
			for _, e := range ents {
				if _, ok := workspace.IsMarkerName(e.Name()); ok {
					return false, "still there: " + e.Name()
				}
			}
			return true, ""
		})
	}
	srv.Stop() // settles the journal
	st = clitest.StateWhere(t, x, hive, func(workspace.State) bool { return true })

	// Every subtask completed exactly once, by the one worker that says it
	// finished it, with its output naming that worker.
	byWorker := map[string]string{}
	var shellDid []string
	for _, p := range procs {
		if p.name == "arc" {
			continue
		}
		did := p.finished(t)
		if p.name == "sh_1" {
			shellDid = did
		}
		for _, id := range did {
			if prev, dup := byWorker[id]; dup {
				t.Errorf("%s finished by %s and by %s", id, prev, p.name)
			}
			byWorker[id] = p.name
		}
		t.Logf("%s finished %d subtasks", p.name, len(did))
	}
	if len(st.Subtasks) != n {
		t.Fatalf("state has %d subtasks, want %d", len(st.Subtasks), n)
	}
	for _, id := range ids {
		ss := st.Subtasks[id]
		if ss == nil || ss.Status != "completed" || ss.Attempts != 1 || ss.Output != "outputs/"+id+".json" {
			t.Errorf("subtask %s: %+v, want completed after 1 attempt with outputs/%s.json", id, ss, id)
			continue
		}
		if byWorker[id] != ss.Worker {
			t.Errorf("subtask %s: state says %s did it, the workers say %q", id, ss.Worker, byWorker[id])
		}
		var out workspace.Output
		readJSONFile(t, filepath.Join(w.Root, "tasks", hive, "outputs", id+".json"), &out)
		if out.SubtaskID != id || out.WorkerID != ss.Worker || out.Status != "completed" {
			t.Errorf("outputs/%s.json: %+v, want worker %s", id, out, ss.Worker)
		}
	}
	if len(byWorker) != n {
		t.Errorf("the workers finished %d subtasks between them, want %d", len(byWorker), n)
	}

	// Every claim was decided once: accepted (work_assigned) or refused.
	recs := clitest.CheckJournal(t, x, hive)
	clitest.CheckJournal(t, x, arc)
	clitest.CheckStates(t, x, []string{hive, arc})
	claims := 0
	for _, r := range recs {
		if r.Kind == workspace.KindClaim {
			claims++
		}
		if r.Rejected != "" {
			t.Errorf("marker %s rejected: %s", r.File, r.Rejected)
		}
	}
	evs, bad, err := x.ReadEvents(t.Context(), hive)
	if err != nil || len(bad) > 0 {
		t.Fatalf("events of %s: %v, bad lines %v", hive, err, bad)
	}
	count := map[string]map[string]int{}
	for _, e := range evs {
		if count[e.Name] == nil {
			count[e.Name] = map[string]int{}
		}
		if len(e.Args) > 0 {
			count[e.Name][e.Args[0]]++
		}
	}
	refused := 0
	for _, c := range count["claim_refused"] {
		refused += c
	}
	explicit := 0
	for _, id := range ids {
		if count["work_assigned"][id] != 1 || count["work_completed"][id] != 1 {
			t.Errorf("subtask %s: assigned %d times, completed %d times; want once each", id, count["work_assigned"][id], count["work_completed"][id])
		}
		explicit += count["work_assigned"][id]
	}
	if claims != explicit+refused {
		t.Errorf("%d claims journaled, %d won and %d refused: every claim must be decided once", claims, explicit, refused)
	}
	t.Logf("%d claims: %d won, %d refused", claims, explicit, refused)

	// The shell worker's progress entry holds exactly what it finished.
	if withShell {
		var prog struct {
			Key      string   `json:"key"`
			StoredBy string   `json:"stored_by"`
			Version  int      `json:"version"`
			Value    []string `json:"value"`
		}
		name := filepath.Join(w.Root, "tasks", hive, "env", "shell_progress.json")
		if len(shellDid) == 0 {
			if _, err := os.Stat(name); !os.IsNotExist(err) {
				t.Errorf("shell worker finished nothing, yet shell_progress: %v", err)
			}
		} else {
			readJSONFile(t, name, &prog)
			if !slices.Equal(prog.Value, shellDid) || prog.Version != len(shellDid) || prog.StoredBy != "sh_1" {
				t.Errorf("shell_progress %+v, want value %v at version %d by sh_1", prog, shellDid, len(shellDid))
			}
			// The Go reader sees the same entry.
			got := w.Ok("env", "get", "--task", hive, "--key", "shell_progress")
			var v []string
			clitest.Decode(t, got, &v)
			if !slices.Equal(v, shellDid) {
				t.Errorf("env get shell_progress = %v, want %v", v, shellDid)
			}
		}
	}

	// The ARC walkthrough's env data, exactly.
	wantEnv := map[string]struct {
		by    string
		value string
	}{
		"arc_task":          {"solver", `{"task_id":"training-001","train":[{"input":[[0,1,2],[3,4,5],[6,7,8]],"output":[[8,7,6],[5,4,3],[2,1,0]]}],"test":{"input":[[1,0,0],[0,2,0],[0,0,3]]}}`},
		"observed_patterns": {"observer", `["rotation_180","colour_preserving"]`},
		"solution_attempts": {"solver", `[{"rule":["rotation_180","colour_preserving"],"output":[[3,0,0],[0,2,0],[0,0,1]]}]`},
	}
	var manifest []workspace.ManifestItem
	clitest.Decode(t, w.Ok("env", "list", "--task", arc, "--json"), &manifest)
	var keys []string
	for _, m := range manifest {
		keys = append(keys, m.Key)
		if want, ok := wantEnv[m.Key]; ok && (m.StoredBy != want.by || m.Version != 1) {
			t.Errorf("env %s: stored by %s at version %d, want %s at 1", m.Key, m.StoredBy, m.Version, want.by)
		}
	}
	sort.Strings(keys)
	if !reflect.DeepEqual(keys, []string{"arc_task", "observed_patterns", "solution_attempts"}) {
		t.Errorf("env keys of %s: %v", arc, keys)
	}
	for key, want := range wantEnv {
		got := w.Ok("env", "get", "--task", arc, "--key", key)
		var a, b any
		clitest.Decode(t, got, &a)
		clitest.Decode(t, want.value, &b)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("env %s = %s, want %s", key, strings.TrimSpace(got), want.value)
		}
	}
	arcEvents, bad, err := x.ReadEvents(t.Context(), arc)
	if err != nil || len(bad) > 0 {
		t.Fatalf("events of %s: %v, bad lines %v", arc, err, bad)
	}
	stored := 0
	for _, e := range arcEvents {
		if e.Name == "env_stored" {
			stored++
		}
	}
	if stored != 3 {
		t.Errorf("%s: %d env_stored events, want 3", arc, stored)
	}

	if r := w.Run("validate", w.Root); r.Code != 0 {
		t.Fatalf("validate: %v", r)
	}
}
