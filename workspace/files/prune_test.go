package files

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/retention"
	"github.com/workspaced/workspaced/vocab"
)

var pruneNow = time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)

func at(age time.Duration) string { return pruneNow.Add(-age).Format(time.RFC3339Nano) }

// mixedSpecs is a tree of finished and active tasks of many ages, with a
// malformed state, summarised tasks and clock skew.
func mixedSpecs() []taskSpec {
	return []taskSpec{
		{id: "c_half_day", status: vocab.StatusCompleted, completedAt: at(retention.Day / 2)},
		{id: "c_6d", status: vocab.StatusCompleted, completedAt: at(6 * retention.Day)},
		{id: "c_7d_exact", status: vocab.StatusCompleted, completedAt: at(7 * retention.Day)},
		{id: "c_8d", status: vocab.StatusCompleted, completedAt: at(8 * retention.Day)},
		{id: "c_15d", status: vocab.StatusCompleted, completedAt: at(15 * retention.Day)},
		{id: "c_30d_minus_1ns", status: vocab.StatusCompleted, completedAt: at(30*retention.Day - 1)},
		{id: "c_30d_exact", status: vocab.StatusCompleted, completedAt: at(30 * retention.Day)},
		{id: "c_45d", status: vocab.StatusCompleted, completedAt: at(45 * retention.Day)},
		{id: "c_400d", status: vocab.StatusCompleted, completedAt: at(400 * retention.Day)},
		{id: "f_10d", status: vocab.StatusFailed, completedAt: at(10 * retention.Day)},
		{id: "f_31d", status: vocab.StatusFailed, completedAt: at(31 * retention.Day)},
		{id: "x_9d", status: vocab.StatusCancelled, completedAt: at(9 * retention.Day)},
		{id: "x_60d", status: vocab.StatusCancelled, completedAt: at(60 * retention.Day)},
		{id: "a_planning", status: vocab.StatusPlanning},
		{id: "a_executing_old", status: vocab.StatusExecuting, completedAt: at(90 * retention.Day)},
		{id: "a_no_state"},
		{id: "m_malformed", rawState: "{\"status\": \"completed\", \"completed_at\": "},
		{id: "m_no_completed_at", status: vocab.StatusCompleted},
		{id: "m_bad_completed_at", status: vocab.StatusFailed, completedAt: "last tuesday"},
		{id: "m_future", status: vocab.StatusCompleted, completedAt: at(-3 * retention.Day)},
		{id: "s_summarised_10d", status: vocab.StatusCompleted, completedAt: at(10 * retention.Day), summarized: true},
		{id: "s_summarised_40d", status: vocab.StatusCompleted, completedAt: at(40 * retention.Day), summarized: true},
	}
}

// buildTree writes specs under a new temporary root and opens it.
func buildTree(t testing.TB, specs []taskSpec) (string, *os.Root) {
	t.Helper()
	dir := t.TempDir()
	for _, s := range specs {
		writeTask(t, dir, s)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return dir, root
}

// expected maps each task id to the action a real run must take.
func expected(specs []taskSpec) map[string]retention.Action {
	infos := make([]retention.TaskInfo, len(specs))
	for i, s := range specs {
		infos[i] = s.info()
	}
	out := map[string]retention.Action{}
	for _, d := range retention.Apply(infos, retention.DefaultPolicy(), pruneNow) {
		if d.Reason == "state.json unreadable: unreadable" {
			d.Action = retention.Skip
		}
		out[d.TaskID] = d.Action
	}
	return out
}

func ids(ds []retention.Decision) []string {
	out := []string{}
	for _, d := range ds {
		out = append(out, d.TaskID)
	}
	return out
}

func idsWith(want map[string]retention.Action, a retention.Action) []string {
	out := []string{}
	for id, got := range want {
		if got == a {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

func newPruner(root *os.Root, dir string) *Pruner {
	return &Pruner{Root: root, RootDir: dir, Policy: retention.DefaultPolicy(), Now: func() time.Time { return pruneNow }, Agent: "cleanup-test"}
}

func checkReport(t *testing.T, rep retention.Report, want map[string]retention.Action) {
	t.Helper()
	for _, c := range []struct {
		a    retention.Action
		list []retention.Decision
	}{{retention.Keep, rep.Kept}, {retention.Summarize, rep.Summarized}, {retention.Remove, rep.Removed}, {retention.Skip, rep.Skipped}} {
		if got, w := ids(c.list), idsWith(want, c.a); !slices.Equal(got, w) {
			t.Errorf("%s: got %v, want %v", c.a, got, w)
		}
	}
	c := rep.Counts
	if c.Kept != len(rep.Kept) || c.Summarized != len(rep.Summarized) || c.Removed != len(rep.Removed) || c.Skipped != len(rep.Skipped) {
		t.Errorf("counts %+v do not match the lists", c)
	}
}

func TestPruneEndToEnd(t *testing.T) {
	t.Parallel()
	specs := mixedSpecs()
	dir, root := buildTree(t, specs)
	want := expected(specs)
	// The table must exercise every outcome, or the test proves little.
	for _, a := range []retention.Action{retention.Keep, retention.Summarize, retention.Remove, retention.Skip} {
		if len(idsWith(want, a)) == 0 {
			t.Fatalf("no task is expected to %s", a)
		}
	}
	before := snapshot(t, dir)
	originals := map[string]map[string]entry{}
	for _, s := range specs {
		originals[s.id] = snapshot(t, filepath.Join(dir, "tasks", s.id))
	}

	// A dry run changes nothing, not even lock files, and reports what a
	// real run would do.
	dry := newPruner(root, dir)
	dry.DryRun = true
	var progress []string
	dry.OnProgress = func(d retention.Decision) { progress = append(progress, d.TaskID) }
	rep, err := dry.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d := diffSnapshots(before, snapshot(t, dir)); d != "" {
		t.Fatalf("dry run changed the tree:\n%s", d)
	}
	if !rep.DryRun {
		t.Error("report of a dry run does not say so")
	}
	checkReport(t, rep, want)
	if len(progress) != len(specs) {
		t.Errorf("OnProgress called %d times, want %d", len(progress), len(specs))
	}

	// The real run leaves exactly what the policy says.
	rep, err = newPruner(root, dir).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Errors) > 0 {
		t.Fatalf("errors: %v", rep.Errors)
	}
	checkReport(t, rep, want)
	for _, d := range rep.Skipped {
		if !strings.Contains(d.Reason, "state.json unreadable") {
			t.Errorf("%s skipped for %q, want an unreadable state", d.TaskID, d.Reason)
		}
	}
	for id, a := range want {
		shape := taskShape(t, dir, id, originals[id])
		wantShape := map[retention.Action]string{retention.Keep: "whole", retention.Skip: "whole", retention.Summarize: "summarised", retention.Remove: "gone"}[a]
		if shape != wantShape {
			t.Errorf("%s (%s): %s, want %s", id, a, shape, wantShape)
		}
		if a == retention.Keep || a == retention.Skip {
			// Kept tasks are untouched, lock directory included.
			if d := diffSnapshots(originals[id], snapshot(t, filepath.Join(dir, "tasks", id))); d != "" {
				t.Errorf("kept task %s changed:\n%s", id, d)
			}
		}
		if a == retention.Summarize {
			if _, err := os.Stat(filepath.Join(dir, "tasks", id, ".locks", "task.lock")); err != nil {
				t.Errorf("summarised task %s lost its lock file: %v", id, err)
			}
		}
	}
	if l := leftovers(t, dir); len(l) > 0 {
		t.Errorf("leftovers after a clean run: %v", l)
	}

	// A second run finds nothing more to do.
	rep, err = newPruner(root, dir).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Summarized)+len(rep.Removed) != 0 {
		t.Errorf("second run acted again: summarised %v, removed %v", ids(rep.Summarized), ids(rep.Removed))
	}
}

func TestPruneRefusesBadInput(t *testing.T) {
	t.Parallel()
	dir, root := buildTree(t, []taskSpec{{id: "c_400d", status: vocab.StatusCompleted, completedAt: at(400 * retention.Day)}})
	before := snapshot(t, dir)
	p := newPruner(root, dir)
	p.Policy = retention.Policy{}
	if _, err := p.Run(context.Background()); !errors.Is(err, retention.ErrInvalidPolicy) {
		t.Fatalf("zero policy: err %v, want ErrInvalidPolicy", err)
	}
	if d := diffSnapshots(before, snapshot(t, dir)); d != "" {
		t.Fatalf("refused run changed the tree:\n%s", d)
	}

	// A name that is not a task id, a stray file and a symlink are left alone.
	for _, name := range []string{"bad name", "-dash"} {
		if err := os.Mkdir(filepath.Join(dir, "tasks", name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "tasks", "README"), []byte("hi"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("c_400d", filepath.Join(dir, "tasks", "link")); err != nil {
		t.Fatal(err)
	}
	rep, err := newPruner(root, dir).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(rep.Skipped); !slices.Equal(got, []string{"-dash", "bad name"}) {
		t.Errorf("skipped %v, want the two invalid names", got)
	}
	if got := ids(rep.Removed); !slices.Equal(got, []string{"c_400d"}) {
		t.Errorf("removed %v, want [c_400d]", got)
	}
	for _, name := range []string{"bad name", "-dash", "README"} {
		if _, err := os.Stat(filepath.Join(dir, "tasks", name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}

	// No tasks/ at all is an empty workspace.
	empty, err := os.OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer empty.Close()
	rep, err = (&Pruner{Root: empty, Policy: retention.DefaultPolicy()}).Run(context.Background())
	if err != nil || rep.Counts != (retention.Counts{}) {
		t.Fatalf("empty workspace: %+v, %v", rep.Counts, err)
	}
}

// startHolder starts a process that holds the lock at lockPath as agent.
// Closing the returned stdin releases it.
func startHolder(t *testing.T, lockPath, agent string) (*exec.Cmd, func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=hold", "LOCK_PATH="+lockPath, "LOCK_AGENT="+agent)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "locked\n" {
		_ = cmd.Process.Kill()
		t.Fatalf("holder: %q, %v", line, err)
	}
	release := func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("holder: %v", err)
		}
	}
	return cmd, release
}

func TestPruneSkipsBusyTask(t *testing.T) {
	t.Parallel()
	specs := []taskSpec{
		{id: "busy_8d", status: vocab.StatusCompleted, completedAt: at(8 * retention.Day)},
		{id: "free_8d", status: vocab.StatusCompleted, completedAt: at(8 * retention.Day)},
		{id: "busy_40d", status: vocab.StatusCompleted, completedAt: at(40 * retention.Day)},
	}
	dir, root := buildTree(t, specs)
	orig := map[string]map[string]entry{}
	for _, s := range specs {
		orig[s.id] = snapshot(t, filepath.Join(dir, "tasks", s.id))
	}
	holder1, release1 := startHolder(t, filepath.Join(dir, "tasks", "busy_8d", ".locks", "task.lock"), "daemon")
	holder2, release2 := startHolder(t, filepath.Join(dir, "tasks", "busy_40d", ".locks", "task.lock"), "worker_7")
	pids := map[string]string{"busy_8d": strconv.Itoa(holder1.Process.Pid), "busy_40d": strconv.Itoa(holder2.Process.Pid)}
	agents := map[string]string{"busy_8d": "daemon", "busy_40d": "worker_7"}

	for _, dry := range []bool{true, false} {
		p := newPruner(root, dir)
		p.DryRun = dry
		rep, err := p.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(rep.Skipped); !slices.Equal(got, []string{"busy_40d", "busy_8d"}) {
			t.Fatalf("dry=%v: skipped %v, want both busy tasks", dry, got)
		}
		for _, d := range rep.Skipped {
			if d.Action != retention.Skip || !strings.Contains(d.Reason, "busy") || !strings.Contains(d.Reason, "pid "+pids[d.TaskID]) || !strings.Contains(d.Reason, agents[d.TaskID]) {
				t.Errorf("dry=%v: %s: %s %q, want busy naming pid %s and agent %s", dry, d.TaskID, d.Action, d.Reason, pids[d.TaskID], agents[d.TaskID])
			}
		}
		if got := ids(rep.Summarized); !slices.Equal(got, []string{"free_8d"}) {
			t.Errorf("dry=%v: summarised %v, want [free_8d]", dry, got)
		}
		if len(rep.Errors) > 0 {
			t.Errorf("dry=%v: a busy task is not an error: %v", dry, rep.Errors)
		}
	}
	for _, id := range []string{"busy_8d", "busy_40d"} {
		if shape := taskShape(t, dir, id, orig[id]); shape != "whole" {
			t.Errorf("busy task %s: %s, want whole", id, shape)
		}
	}

	// Once released, the next run does the work.
	release1()
	release2()
	rep, err := newPruner(root, dir).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(rep.Summarized); !slices.Equal(got, []string{"busy_8d"}) {
		t.Errorf("after release: summarised %v, want [busy_8d]", got)
	}
	if got := ids(rep.Removed); !slices.Equal(got, []string{"busy_40d"}) {
		t.Errorf("after release: removed %v, want [busy_40d]", got)
	}
}

func TestPruneOneAtATime(t *testing.T) {
	t.Parallel()
	dir, root := buildTree(t, []taskSpec{{id: "c_400d", status: vocab.StatusCompleted, completedAt: at(400 * retention.Day)}})
	_, release := startHolder(t, filepath.Join(dir, filepath.FromSlash(cleanupLock)), "other-cleanup")
	_, err := newPruner(root, dir).Run(context.Background())
	if !errors.Is(err, retention.ErrCleanupRunning) || !errors.Is(err, locking.ErrLocked) || !strings.Contains(err.Error(), "other-cleanup") {
		t.Fatalf("err %v, want ErrCleanupRunning naming the holder", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "tasks", "c_400d")); err != nil {
		t.Fatalf("task touched while another cleanup ran: %v", err)
	}
	// A dry run takes no lock, so it runs alongside.
	dry := newPruner(root, dir)
	dry.DryRun = true
	rep, err := dry.Run(context.Background())
	if err != nil || !slices.Equal(ids(rep.Removed), []string{"c_400d"}) {
		t.Fatalf("dry run beside a cleanup: removed %v, %v", ids(rep.Removed), err)
	}
	release()
}
