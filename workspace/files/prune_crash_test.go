package files

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/workspaced/workspaced/retention"
	"github.com/workspaced/workspaced/vocab"
)

func TestRecoverLeftovers(t *testing.T) {
	t.Parallel()
	specs := []taskSpec{
		{id: "whole", status: vocab.StatusCompleted, completedAt: at(retention.Day)},
		{id: "limbo", status: vocab.StatusCompleted, completedAt: at(10 * retention.Day), summarized: true},
	}
	dir, root := buildTree(t, specs)
	tasks := filepath.Join(dir, "tasks")
	// An unfinished summary of a task still in place.
	if err := os.MkdirAll(filepath.Join(tasks, ".prune-whole", ".locks"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A complete summary whose task the fallback had moved to trash.
	if err := os.Rename(filepath.Join(tasks, "limbo"), filepath.Join(tasks, ".prune-limbo")); err != nil {
		t.Fatal(err)
	}
	writeTask(t, filepath.Join(tasks, ".trash-limbo-root"), taskSpec{id: "x", status: vocab.StatusCompleted})
	if err := os.Rename(filepath.Join(tasks, ".trash-limbo-root", "tasks", "x"), filepath.Join(tasks, ".trash-limbo")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(tasks, ".trash-limbo-root")); err != nil {
		t.Fatal(err)
	}
	// An old tree whose task went away since: deleted, not resurrected.
	writeTask(t, dir, taskSpec{id: "orphan", status: vocab.StatusCompleted, completedAt: at(retention.Day)})
	if err := os.Rename(filepath.Join(tasks, "orphan"), filepath.Join(tasks, ".prune-orphan")); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)

	dry := newPruner(root, dir)
	dry.DryRun = true
	rep, err := dry.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Recovered) != 4 {
		t.Errorf("dry run lists %v, want 4 leftovers", rep.Recovered)
	}
	if d := diffSnapshots(before, snapshot(t, dir)); d != "" {
		t.Fatalf("dry run changed the tree:\n%s", d)
	}

	rep, err = newPruner(root, dir).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Errors) > 0 {
		t.Fatal(rep.Errors)
	}
	if l := leftovers(t, dir); len(l) > 0 {
		t.Errorf("leftovers after recovery: %v", l)
	}
	if _, err := os.Stat(filepath.Join(tasks, "limbo", "state.json")); err != nil {
		t.Errorf("summary not moved into place: %v", err)
	}
	if _, err := os.Stat(filepath.Join(tasks, "orphan")); !os.IsNotExist(err) {
		t.Errorf("orphaned old tree came back as a task: %v", err)
	}
	if got := ids(rep.Kept); !slices.Equal(got, []string{"limbo", "whole"}) {
		t.Errorf("kept %v, want [limbo whole]", got)
	}
}

// TestPruneCrashSafety kills a pruning process with SIGKILL, first at every
// step of summarising and removing in turn, then at random moments, and
// checks after each kill that every task is whole, summarised or gone, then
// that a later run completes the work.
func TestPruneCrashSafety(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"exchange", "fallback"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			testCrashSafety(t, mode == "fallback")
		})
	}
}

func testCrashSafety(t *testing.T, fallback bool) {
	var specs []taskSpec
	for i := range 150 {
		var age time.Duration
		switch i % 3 {
		case 0:
			age = 2 * retention.Day // keep
		case 1:
			age = 10 * retention.Day // summarize
		default:
			age = 50 * retention.Day // remove
		}
		specs = append(specs, taskSpec{id: fmt.Sprintf("t%03d", i), status: vocab.StatusCompleted, completedAt: at(age)})
	}
	dir, root := buildTree(t, specs)
	want := expected(specs)
	orig := map[string]map[string]entry{}
	for _, s := range specs {
		orig[s.id] = snapshot(t, filepath.Join(dir, "tasks", s.id))
	}
	allowed := map[retention.Action][]string{retention.Keep: {"whole"}, retention.Summarize: {"whole", "summarised"}, retention.Remove: {"whole", "gone"}}
	check := func(when string) {
		t.Helper()
		// With the atomic exchange the tree is consistent at every
		// instant; the fallback may leave a summary for recovery to move
		// into place.
		if fallback {
			recoverOnly(t, root, dir)
		}
		for id, a := range want {
			if shape := taskShape(t, dir, id, orig[id]); !slices.Contains(allowed[a], shape) {
				t.Fatalf("%s: task %s (%s) is %s", when, id, a, shape)
			}
		}
	}
	// start runs a pruning child; kill, if set, decides when to kill it
	// from its progress lines. It returns the child's output lines.
	start := func(env ...string) (*exec.Cmd, *bufio.Scanner) {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"=prune", "PRUNE_ROOT="+dir, "PRUNE_NOW="+pruneNow.Format(time.RFC3339Nano))
		if fallback {
			cmd.Env = append(cmd.Env, "PRUNE_FALLBACK=1")
		}
		cmd.Env = append(cmd.Env, env...)
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, bufio.NewScanner(out)
	}

	// Every step, in turn: in batches of three, the N-th step of a run
	// is somewhere in its first few tasks, which differ from run to run
	// as work gets done. Sweep N over the first twenty steps, then crash
	// at the first step of each kind not hit yet: every kind is hit
	// without sweeping again and again for the rare ones.
	wantSteps := []string{
		"summarize: summary directory created", "summarize: linked a summary file",
		"summarize: summary durable", "summarize: swapped", "summarize: change durable",
		"remove: task moved to trash", "remove: change durable",
	}
	if fallback {
		wantSteps = append(wantSteps, "summarize: task moved to trash")
	}
	steps := map[string]bool{}
	missing := func() []string {
		var out []string
		for _, s := range wantSteps {
			if !steps[s] {
				out = append(out, s)
			}
		}
		return out
	}
	crashes := 0
	crashAt := func(when string, env ...string) {
		crashes++
		cmd, sc := start(append(env, "PRUNE_BATCH=3")...)
		for sc.Scan() {
			if step, ok := strings.CutPrefix(sc.Text(), "crash at "); ok {
				steps[step] = true
			}
		}
		_ = cmd.Wait()
		check("after a crash at " + when)
	}
	for n := 1; n <= 20; n++ {
		crashAt(fmt.Sprintf("step %d", n), fmt.Sprintf("PRUNE_CRASH_AT=%d", n))
	}
	for _, kind := range missing() {
		crashAt("the first "+kind, "PRUNE_CRASH_KIND="+kind)
	}
	if m := missing(); len(m) > 0 {
		t.Errorf("never crashed at %q (crashed at %v)", m, steps)
	}

	// Random moments: after a random number of handled tasks and a
	// random pause, the child is somewhere inside a later one. The pause
	// is the point of the test, not a wait for a condition.
	rng := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
	kills := 0
	for iter := range 12 {
		cmd, sc := start()
		n := rng.IntN(6)
		seen := 0
		for seen < n && sc.Scan() {
			seen++
		}
		time.Sleep(time.Duration(rng.IntN(1500)) * time.Microsecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			kills++
		}
		check(fmt.Sprintf("after random kill %d (after %d progress lines)", iter, seen))
	}
	if kills == 0 {
		t.Fatal("no child was killed mid-run; the test proved nothing")
	}
	t.Logf("steps crashed at: %d kinds in %d runs; random kills mid-run: %d of 12", len(steps), crashes, kills)

	p := newPruner(root, dir)
	if fallback {
		p.exchange = noExchange
	}
	rep, err := p.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Errors) > 0 {
		t.Fatal(rep.Errors)
	}
	for id, a := range want {
		final := map[retention.Action]string{retention.Keep: "whole", retention.Summarize: "summarised", retention.Remove: "gone"}[a]
		if shape := taskShape(t, dir, id, orig[id]); shape != final {
			t.Errorf("after the final run: task %s (%s) is %s", id, a, shape)
		}
	}
	if l := leftovers(t, dir); len(l) > 0 {
		t.Errorf("leftovers after the final run: %v", l)
	}
}

// recoverOnly runs the recovery step alone, as Run would before pruning.
func recoverOnly(t *testing.T, root *os.Root, dir string) {
	t.Helper()
	var rep retention.Report
	r := &run{p: newPruner(root, dir), rootDir: dir, now: pruneNow, rep: &rep}
	if err := r.recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(rep.Errors) > 0 {
		t.Fatal(rep.Errors)
	}
}
