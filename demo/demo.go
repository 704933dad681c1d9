// Package demo runs the whole Hivemind flow (a planned, reviewed task worked
// by several agents) and the ARC-AGI env-data exchange on a fresh
// workspace, with simulated agents,
// so a newcomer can watch the workspace work in one command
// (`workspaced demo`).
//
// The simulated agents are goroutines that act only as any agent would:
// through the workspace API and the files it writes (tasks, plans, outputs,
// reviews, env entries, threads and .claim/.done markers). None of them
// ever writes state.json: an in-process daemon (workspace/daemon) is the
// single writer, and the agents learn what happened by reading state.json
// back. Every wait is a condition on state.json with a deadline, never a
// bare sleep; the only sleeps are the simulated work delays, which
// Config.TimeScale shortens.
//
// The Hivemind task goes through: a plan v1 proposed, a plan review asking
// for a revision (with issues), plan v2 (v1 kept in plans/) approved, N
// workers claiming and finishing subtasks with dependencies in parallel, a
// checkpoint reached and approved by a checkpoint_review, one subtask failing
// once (max_retries 1) and then retried and completed, and friction
// recorded for the revision and the failure. The ARC task then shows a
// coordinator → solver → observer delegation sharing env data.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/workspaced/workspaced/friction"
	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/daemon"
)

// Defaults of Config.
const (
	// DefaultAgents is how many workers run when Config.Agents is zero.
	DefaultAgents = 3
	// MaxAgents bounds Config.Agents.
	MaxAgents = 32
	// DefaultWait bounds every wait for a state change.
	DefaultWait = 60 * time.Second
	// PollInterval is how often agents re-read state.json while waiting.
	PollInterval = 5 * time.Millisecond
)

// The ids the demo creates; the root is fresh, so they never collide.
const (
	// TaskID is the Hivemind task (a REST auth API).
	TaskID = "auth_api"
	// ARCTaskID is the env-data exchange task (an ARC-AGI puzzle).
	ARCTaskID = "arc_training_001"
	// FailingSubtask fails on its first attempt and is retried.
	FailingSubtask = "st_4"
	// CheckpointID is the checkpoint reviewed mid-way.
	CheckpointID = "checkpoint_1"
)

// Errors of this package.
var (
	// ErrRootInUse: --root names a directory that already holds tasks or
	// other files.
	ErrRootInUse = errors.New("root is not empty")
	// ErrTimeout: the state did not reach an expected condition in time.
	ErrTimeout = errors.New("timed out waiting for the state")
)

// Config configures Run. Zero fields take the defaults.
type Config struct {
	// Root is the workspace to create. Empty: a new directory under the
	// OS temp dir. An existing directory must be empty, or a workspace
	// without tasks.
	Root string
	// Agents is the number of workers (worker_1..worker_N).
	Agents int
	// TimeScale multiplies the simulated work delays (1: a few seconds in
	// all; tests use 0.01). Zero means 1.
	TimeScale float64
	// Out receives the event stream, the agents' narration and the
	// summary (nil: discarded).
	Out io.Writer
	// Quiet leaves out the event stream and the narration.
	Quiet bool
	// Wait bounds each wait for a state change (zero: DefaultWait).
	Wait time.Duration
	// Logger receives the daemon's logs (nil: discarded).
	Logger *slog.Logger
	// Command is how the summary's suggested commands run this binary:
	// "workspaced" (the default), an absolute path, or "go run
	// ./cmd/workspaced" for a binary 'go run' built and has removed.
	Command string
}

// SubtaskResult is one subtask as the final state.json records it.
type SubtaskResult struct {
	ID       string
	Status   string
	Worker   string
	Attempts int
}

// Summary is what a run produced, read back from the tree.
type Summary struct {
	// Root is the absolute path of the workspace.
	Root string
	// State is the Hivemind task's final state.json.
	State workspace.State
	// Subtasks are its subtasks in id order.
	Subtasks []SubtaskResult
	// PlanVersions are the plan versions kept (plans/ and plan.json).
	PlanVersions []int
	// Friction are the friction log's entries after the run.
	Friction []friction.Entry
	// FrictionByDetectors says whether the daemon's detectors recorded
	// the friction (true) or the demo added it with friction.Log.Add.
	FrictionByDetectors bool
	// EnvKeys are the ARC task's env data keys.
	EnvKeys []workspace.ManifestItem
	// Preamble is the delegation preamble the observer received.
	Preamble string
	// Events counts the lines of both tasks' events.log.
	Events int
}

// printer serialises writes to Out from the agents and the event follower.
type printer struct {
	mu    sync.Mutex
	w     io.Writer
	quiet bool
}

func (p *printer) line(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, format+"\n", args...)
}

// say is an agent's narration: what it does and why.
func (p *printer) say(agent, format string, args ...any) {
	if p.quiet {
		return
	}
	p.line("  agent  %-13s %s", agent, fmt.Sprintf(format, args...))
}

// event prints one events.log line in a readable form.
func (p *printer) event(e workspace.Event) {
	if p.quiet {
		return
	}
	var b strings.Builder
	b.WriteString(e.Name)
	for _, a := range e.Args {
		b.WriteString(" " + a)
	}
	for _, k := range slices.Sorted(maps.Keys(e.Attrs)) {
		v := cut(strings.ReplaceAll(e.Attrs[k], "\n", "; "), 60)
		if strings.Contains(v, " ") || v == "" {
			v = `"` + v + `"`
		}
		b.WriteString(" " + k + "=" + v)
	}
	p.line("  event  %s  %-16s %s", e.Time.UTC().Format("15:04:05.000"), e.TaskID, b.String())
}

// cut puts s on one line and shortens it to n runes.
func cut(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// run is one demo run.
type run struct {
	cfg  Config
	ws   workspace.Store
	dir  string // the root, absolute
	out  *printer
	wait time.Duration

	preamble    string // what the observer received
	byDetectors bool   // the daemon's detectors recorded the friction
}

// Run creates the workspace, starts the daemon in-process, plays the flow
// and returns what it produced. The daemon is stopped before Run returns,
// whatever happens. It returns an error wrapping ErrRootInUse for a root
// that is in use, ErrTimeout when the state stops moving.
func Run(ctx context.Context, cfg Config) (Summary, error) {
	if cfg.Agents <= 0 {
		cfg.Agents = DefaultAgents
	}
	if cfg.Agents > MaxAgents {
		return Summary{}, fmt.Errorf("demo: %d agents: at most %d", cfg.Agents, MaxAgents)
	}
	if cfg.TimeScale <= 0 {
		cfg.TimeScale = 1
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	if cfg.Wait <= 0 {
		cfg.Wait = DefaultWait
	}
	out := &printer{w: cfg.Out, quiet: cfg.Quiet}
	root, ownSettings, err := prepareRoot(cfg.Root)
	if err != nil {
		return Summary{}, err
	}
	out.line("workspaced demo: a fresh workspace at %s", root)
	ws, dir, err := setup(ctx, root, ownSettings, cfg.Agents)
	if err != nil {
		return Summary{}, err
	}
	defer ws.Close()
	r := &run{cfg: cfg, ws: ws, dir: dir, out: out, wait: cfg.Wait}

	// The daemon, in-process: the only writer of state.json.
	ready := make(chan struct{})
	tree, err := service.Open(ctx, root, service.Options{Logger: cfg.Logger})
	if err != nil {
		return Summary{}, fmt.Errorf("demo: start daemon: %w", err)
	}
	defer tree.Close()
	served, _, err := service.Serve(tree, "", 0)
	if err != nil {
		return Summary{}, fmt.Errorf("demo: start daemon: %w", err)
	}
	d, err := daemon.New(daemon.Config{Store: served, Rescan: time.Second, CleanupInterval: -1, Logger: cfg.Logger,
		Ready: func() { close(ready) }})
	if err != nil {
		return Summary{}, fmt.Errorf("demo: start daemon: %w", err)
	}
	dctx, stopDaemon := context.WithCancel(ctx)
	defer stopDaemon()
	derr := make(chan error, 1)
	go func() { derr <- d.Run(dctx) }()
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		stopDaemon()
		select {
		case err := <-derr:
			return err
		case <-time.After(r.wait):
			return fmt.Errorf("demo: the daemon did not stop within %s", r.wait)
		}
	}
	defer stop()
	select {
	case <-ready:
	case err := <-derr:
		stopped = true
		return Summary{}, fmt.Errorf("demo: daemon: %w", err)
	case <-time.After(r.wait):
		return Summary{}, fmt.Errorf("demo: the daemon did not start within %s: %w", r.wait, ErrTimeout)
	case <-ctx.Done():
		return Summary{}, ctx.Err()
	}
	if !cfg.Quiet {
		out.line("workspaced demo: the daemon serves the root; events stream as the agents work\n")
	}

	// The live feed: every task's events.log, tailed.
	fctx, stopFollow := context.WithCancel(ctx)
	var (
		printedMu sync.Mutex
		printed   = map[string]int{} // task id → lines printed
	)
	followDone := make(chan error, 1)
	go func() {
		followDone <- ws.FollowEvents(fctx, "", true, 10*time.Millisecond, func(e workspace.Event) {
			printedMu.Lock()
			printed[e.TaskID]++
			printedMu.Unlock()
			out.event(e)
		})
	}()
	flowErr := r.flow(ctx)
	// Let the feed catch up with what is on disk before stopping it.
	if flowErr == nil {
		flowErr = r.until(ctx, "the event feed to catch up", func() (bool, error) {
			for _, id := range []string{TaskID, ARCTaskID} {
				evs, _, err := ws.ReadEvents(ctx, id)
				if err != nil {
					return false, err
				}
				printedMu.Lock()
				n := printed[id]
				printedMu.Unlock()
				if n < len(evs) {
					return false, nil
				}
			}
			return true, nil
		})
	}
	stopFollow()
	if err := <-followDone; err != nil && flowErr == nil {
		flowErr = fmt.Errorf("demo: follow events: %w", err)
	}
	if err := stop(); err != nil && flowErr == nil {
		flowErr = fmt.Errorf("demo: daemon: %w", err)
	}
	if flowErr != nil {
		return Summary{Root: root}, flowErr
	}
	sum, err := r.summary(ctx)
	if err != nil {
		return sum, err
	}
	cmd := cfg.Command
	if cmd == "" {
		cmd = "workspaced"
	}
	printSummary(out, sum, cmd)
	return sum, nil
}
