package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/internal/optdep"
	"github.com/workspaced/workspaced/internal/poll"
)

// dotFiles lists the files and directories under dir whose names start
// with a dot, except the .locks/ directories (lock files are made on
// demand, never deleted, and hold no data) and the daemon's lock.
func dotFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".locks" {
			return filepath.SkipDir
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") && d.Name() != ".workspaced.lock" && d.Name() != ".gitignore" {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// TestQuietTaskHasNoDotFiles runs a real 'workspaced serve', drops a burst
// of claims and done markers as agents do, and waits for the task to
// settle: every subtask completed and the taken markers gone from
// journal/. Then the task directory and its journal hold no dot-file — no
// marker left, no temporary file of a write, empty or not.
func TestQuietTaskHasNoDotFiles(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t1")
	const n = 12
	var subtasks []string
	for i := range n {
		subtasks = append(subtasks, fmt.Sprintf(`{"id":"st_%d","description":"part %d"}`, i, i))
	}
	w.RunIn(`{"subtasks":[`+strings.Join(subtasks, ",")+`]}`, "plan", "write", "--task", "t1", "--file", "-", "--agent", "planner", "--propose")
	w.RunIn(`{"type":"plan_review","verdict":"approved"}`, "review", "write", "--task", "t1", "--id", "plan_v1", "--agent", "reviewer", "--file", "-", "--done")

	serve := clitest.Command("serve", "--log-level", "warn")
	serve.Dir, serve.Env = w.Dir, w.Env
	var logs strings.Builder
	serve.Stderr = &logs
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		serve.Process.Kill()
		serve.Wait()
	}()

	state := func() string { return w.Run("state", "show", "--task", "t1", "--json").Stdout }
	awaitSlow(t, "the plan approved", func() bool { return strings.Contains(state(), `"plan_status": "approved"`) })
	for i := range n { // a burst of claims, then one of outputs and done markers
		w.Ok("claim", "--task", "t1", "--agent", fmt.Sprintf("w%d", i), "--subtask", fmt.Sprintf("st_%d", i))
	}
	for i := range n {
		w.RunIn(`{"summary":"done"}`, "output", "write", "--task", "t1", "--subtask", fmt.Sprintf("st_%d", i), "--agent", fmt.Sprintf("w%d", i), "--file", "-", "--done")
	}
	task := filepath.Join(w.Root, "tasks", "t1")
	awaitSlow(t, "the task completed and settled", func() bool {
		// The task's own status: a subtask's "completed" is not the
		// task's, and the markers after it would still be untaken.
		var st struct {
			Status string `json:"status"`
		}
		if json.Unmarshal([]byte(state()), &st) != nil || st.Status != "completed" {
			return false
		}
		ents, err := os.ReadDir(filepath.Join(task, "journal"))
		if err != nil {
			return false
		}
		for _, e := range ents {
			if strings.Contains(e.Name(), ".taken") {
				return false
			}
		}
		return true
	})
	if left := dotFiles(t, task); len(left) > 0 {
		t.Fatalf("a quiet task still holds dot-files: %v\ndaemon log:\n%s", left, logs.String())
	}
}

// awaitSlow is await with a minute, for what a loaded machine makes slow.
func awaitSlow(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, time.Minute, what, func() (bool, string) { return cond(), "not yet" })
}

// TestGitignoreKeepsHistoryClean: the README's 'git init && git add -A'
// in a root that init made records the tree, not its lock files,
// temporary files or the daemon's lock, and keeps the markers.
func TestGitignoreKeepsHistoryClean(t *testing.T) {
	t.Parallel()
	git, err := exec.LookPath("git")
	if err != nil {
		optdep.Skip(t, "git", "git is not installed (Debian: apt-get install git)")
	}
	w := newWS(t)
	w.Task("t1")
	w.Ok("env", "store", "--task", "t1", "--key", "k", "--description", "d", "--value", "1") // makes env/.locks/
	w.Ok("claim", "--task", "t1", "--agent", "w1", "--subtask", "st_1")
	task := filepath.Join(w.Root, "tasks", "t1")
	// What writes in progress and a daemon leave for a moment.
	junk := []string{
		".workspaced.lock",
		"tasks/t1/.state.json4213380961",       // renameio's temporary file of state.json
		"tasks/t1/..done.w1.x1234",             // renameio's temporary file of a marker
		"tasks/t1/outputs/.st_1.json.tmp-9f2c", // an agent's temporary file
		"tasks/t1/journal/.tmp-000000000001.json",
	}
	for _, j := range junk {
		p := filepath.Join(w.Root, filepath.FromSlash(j))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitIn := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(git, args...)
		cmd.Dir = w.Root
		cmd.Env = append(clitest.CleanEnv(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+w.Dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	gitIn("init", "-q")
	gitIn("add", "-A")
	files := strings.Fields(gitIn("ls-files"))
	tracked := map[string]bool{}
	for _, f := range files {
		tracked[f] = true
		if strings.Contains(f, ".locks/") {
			t.Errorf("git tracks a lock file: %s", f)
		}
	}
	for _, j := range junk {
		if tracked[j] {
			t.Errorf("git tracks %s", j)
		}
	}
	for _, want := range []string{".gitignore", "workspace.json", "tasks/t1/task.json", "tasks/t1/env/k.json", "tasks/t1/events.log"} {
		if !tracked[want] {
			t.Errorf("git does not track %s: %v", want, files)
		}
	}
	markers, _ := filepath.Glob(filepath.Join(task, ".claim.w1.*"))
	if len(markers) != 1 || !tracked["tasks/t1/"+filepath.Base(markers[0])] {
		t.Errorf("the waiting claim marker is not tracked: %v in %v", markers, files)
	}
}
