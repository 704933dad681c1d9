package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/workspaced/workspaced/friction"
	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/vocab"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/machine"
	"github.com/workspaced/workspaced/workspace/ops"
)

// prepareRoot picks and checks the root. ownSettings is true when the demo
// creates the workspace and may write its workspace.json.
func prepareRoot(dir string) (root string, ownSettings bool, err error) {
	if dir == "" {
		d, err := os.MkdirTemp("", "workspaced-demo-")
		if err != nil {
			return "", false, fmt.Errorf("demo: create a directory for the workspace: %w", err)
		}
		return d, true, nil
	}
	root, err = filepath.Abs(dir)
	if err != nil {
		return "", false, fmt.Errorf("demo: root %s: %w", dir, err)
	}
	ents, err := os.ReadDir(root)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return root, true, nil
	case err != nil:
		return "", false, fmt.Errorf("demo: root %s: %w", root, err)
	case len(ents) == 0:
		return root, true, nil
	}
	tasks, err := os.ReadDir(filepath.Join(root, "tasks"))
	if err == nil && len(tasks) > 0 {
		return "", false, fmt.Errorf("demo: %s already holds tasks: %w", root, ErrRootInUse)
	}
	_, werr := os.Stat(filepath.Join(root, "workspace.json"))
	if err != nil && werr != nil {
		return "", false, fmt.Errorf("demo: %s is not empty and not a workspace: %w", root, ErrRootInUse)
	}
	return root, false, nil
}

// setup creates the workspace and its agent cards. It is a file tree: the
// demo runs the daemon in-process on it. In a workspace it
// creates, the demo lowers the friction detectors' thresholds to one
// revision and one failure, so the daemon records the demo's single
// revision and single failure itself.
func setup(ctx context.Context, root string, ownSettings bool, workers int) (workspace.Store, string, error) {
	made, err := service.Init(ctx, root, service.Roles{})
	if err != nil {
		return nil, "", fmt.Errorf("demo: %w", err)
	}
	ws, err := service.OpenTree(made.Where, "demo")
	if err != nil {
		return nil, "", fmt.Errorf("demo: %w", err)
	}
	if ownSettings {
		s := ws.Settings()
		s.Friction.RevisionLimit = 1
		s.Friction.FailureRepeats = 1
		if err := ws.WriteJSON("workspace.json", s); err != nil {
			ws.Close()
			return nil, "", fmt.Errorf("demo: write workspace.json: %w", err)
		}
	}
	dir := ws.Dir()
	ws.Close()
	st, err := service.Open(ctx, dir, service.Options{})
	if err != nil {
		return nil, "", fmt.Errorf("demo: %w", err)
	}
	cards, err := st.LoadAgents(ctx)
	if err != nil {
		st.Close()
		return nil, "", fmt.Errorf("demo: %w", err)
	}
	if err := writeCards(st, cards, workers); err != nil {
		st.Close()
		return nil, "", err
	}
	return st, dir, nil
}

// agentCards are the cards of every demo agent.
func agentCards(workers int) []workspace.AgentCard {
	cards := []workspace.AgentCard{
		{Name: "coordinator", Role: "coordinator", Description: "Takes tasks from people and delegates them to the right agents.",
			Capabilities: []string{"delegate"}},
		{Name: "orchestrator", Role: "planner", Description: "Breaks a task into subtasks with dependencies and checkpoints (plan.json).",
			Capabilities: []string{"write_plan"}},
		{Name: "reviewer", Role: "reviewer", Description: "Reviews plans and checkpoints; approves them or sends them back with issues.",
			Capabilities: []string{"write_review"}},
	}
	for i := 1; i <= workers; i++ {
		cards = append(cards, workspace.AgentCard{Name: workerName(i), Role: "worker",
			Description: "Claims pending subtasks, does them and writes their outputs.", Capabilities: []string{"write_code"}})
	}
	return append(cards,
		workspace.AgentCard{Name: "solver", Role: "worker", Description: "Solves ARC-AGI puzzles by finding the transformation from the training pairs.",
			Capabilities: []string{"load_arc_task"}},
		workspace.AgentCard{Name: "observer", Role: "worker", Description: "Looks at a puzzle and reports the patterns it notices.",
			Capabilities: []string{"read_file"}, PreambleDetail: ops.DetailStandard})
}

func workerName(i int) string { return fmt.Sprintf("worker_%d", i) }

// writeCards adds the demo's cards to config/agents.json, keeping any card
// already there.
func writeCards(ws workspace.Store, cards workspace.AgentCards, workers int) error {
	all := workspace.AgentCards{Agents: slices.Clone(cards.Agents)}
	for _, c := range agentCards(workers) {
		if _, ok := cards.Card(c.Name); !ok {
			all.Agents = append(all.Agents, c)
		}
	}
	if err := ws.SaveAgents(context.Background(), all); err != nil {
		return fmt.Errorf("demo: write %s: %w", workspace.AgentsFile, err)
	}
	return nil
}

// scaled is a simulated delay.
func (r *run) scaled(d time.Duration) time.Duration {
	return time.Duration(math.Round(float64(d) * r.cfg.TimeScale))
}

// pause simulates an agent thinking or working. It is never what the flow
// relies on for correctness: every step waits for state.json instead.
func (r *run) pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(r.scaled(d))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// until polls cond every PollInterval until it holds, cond fails, ctx is
// done or the wait deadline passes.
func (r *run) until(ctx context.Context, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(r.wait)
	for {
		ok, err := cond()
		if err != nil {
			return fmt.Errorf("demo: waiting for %s: %w", what, err)
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("demo: waiting for %s: %w after %s", what, ErrTimeout, r.wait)
		}
		t := time.NewTimer(PollInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// state reads a task's state.json; ok is false before the daemon has
// written one.
func (r *run) state(ctx context.Context, id string) (workspace.State, bool, error) {
	st, err := r.ws.ReadState(ctx, id)
	// The safe reader compares the file it opened with a second lstat of
	// the name; when the daemon replaces state.json in between (a rename,
	// never a symlink) it reports a symlink. Read again: a real symlink
	// stays one.
	for try := 0; try < 5 && errors.Is(err, workspace.ErrUnsafe); try++ {
		st, err = r.ws.ReadState(ctx, id)
	}
	if errors.Is(err, workspace.ErrNotFound) {
		return workspace.State{}, false, nil
	}
	return st, err == nil, err
}

// waitState waits until the task's state satisfies cond and returns it.
func (r *run) waitState(ctx context.Context, id, what string, cond func(workspace.State) bool) (workspace.State, error) {
	var st workspace.State
	err := r.until(ctx, what, func() (bool, error) {
		s, ok, err := r.state(ctx, id)
		if err != nil || !ok {
			return false, err
		}
		st = s
		return cond(s), nil
	})
	if err != nil && st.TaskID != "" {
		err = fmt.Errorf("%w (task %s is %s, phase %s, plan %s)", err, id, st.Status, st.Phase, st.PlanStatus)
	}
	return st, err
}

// flow plays both tasks, then makes sure the friction is on record.
func (r *run) flow(ctx context.Context) error {
	if err := r.hivemind(ctx); err != nil {
		return err
	}
	if err := r.arc(ctx); err != nil {
		return err
	}
	return r.friction(ctx)
}

// The Hivemind task: a REST auth API.
var task = workspace.NewTaskRequest{
	ID:          TaskID,
	Description: "Build a REST API for user authentication",
	Context:     "This is for a FastAPI backend, Python 3.11",
	Constraints: []string{"Must use JWT tokens", "Must include rate limiting"},
	Priority:    "normal",
	SubmittedBy: "human",
	To:          "coordinator",
}

// planV1 misses the rate limiting the task asks for; the reviewer sends it
// back.
func planV1() workspace.Plan {
	return workspace.Plan{
		ID: "plan_auth_api", Status: "proposed", Summary: "Auth API with JWT: register, login, refresh",
		Subtasks: []workspace.Subtask{
			{ID: "st_1", Description: "Set up the FastAPI project structure", EstimatedComplexity: "low"},
			{ID: "st_2", Description: "User model and password hashing", Dependencies: []string{"st_1"}, EstimatedComplexity: "medium", Parallelizable: true},
			{ID: "st_3", Description: "JWT issuing and verification", Dependencies: []string{"st_1"}, EstimatedComplexity: "medium", Parallelizable: true},
			{ID: "st_5", Description: "/register and /login endpoints", Dependencies: []string{"st_2", "st_3"}, EstimatedComplexity: "medium"},
			{ID: "st_6", Description: "/refresh and /logout endpoints", Dependencies: []string{"st_3"}, EstimatedComplexity: "low", Parallelizable: true},
		},
		WorkerCount: 3,
		Risks:       []string{"Token revocation needs server-side state"},
		Assumptions: []string{"PostgreSQL is available"},
	}
}

// planV2 adds rate limiting (the subtask that fails once) and tests, and a
// checkpoint over the building blocks.
func planV2(workers int) workspace.Plan {
	p := planV1()
	p.Summary = "Auth API with JWT and rate limiting: register, login, refresh, logout"
	p.Subtasks = []workspace.Subtask{
		p.Subtasks[0], p.Subtasks[1], p.Subtasks[2],
		{ID: FailingSubtask, Description: "Rate limiting middleware for /login", Dependencies: []string{"st_1"}, EstimatedComplexity: "medium",
			Parallelizable: true, MaxRetries: 1},
		{ID: "st_5", Description: "/register and /login endpoints", Dependencies: []string{"st_2", "st_3", FailingSubtask}, EstimatedComplexity: "medium"},
		p.Subtasks[4],
		{ID: "st_7", Description: "Integration tests of every endpoint", Dependencies: []string{"st_5", "st_6"}, EstimatedComplexity: "medium"},
	}
	p.Checkpoints = []workspace.Checkpoint{{ID: CheckpointID, Description: "The building blocks: project, users, tokens, rate limiting",
		Subtasks: []string{"st_1", "st_2", "st_3", FailingSubtask}}}
	p.WorkerCount = workers
	p.Risks = append(p.Risks, "Rate limiting needs a shared store across instances")
	return p
}

// hivemind plays the Hivemind flow on TaskID: plan, review, revision,
// parallel work, a checkpoint, a failure retried.
func (r *run) hivemind(ctx context.Context) error {
	ws := r.ws
	r.out.say("human", "asks the coordinator: %q", task.Description)
	if _, err := ws.CreateTask(ctx, task); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	r.out.say("coordinator", "hands task %s to the orchestrator for a plan", TaskID)
	if err := r.pause(ctx, 100*time.Millisecond); err != nil {
		return err
	}

	// Plan v1, sent back for revision.
	if err := r.propose(ctx, planV1()); err != nil {
		return err
	}
	issues := []workspace.ReviewIssue{
		{Severity: "high", Location: "plan", Problem: "Missing rate limiting requirement", Suggestion: "Add a rate limiting subtask for /login"},
		{Severity: "medium", Location: "plan", Problem: "No tests planned", Suggestion: "Add integration tests of every endpoint"},
	}
	if err := r.review(ctx, "plan_v1", machine.ReviewPlan, "plan_auth_api_v1", machine.VerdictRevisionNeeded, issues,
		"Good structure, needs security hardening"); err != nil {
		return err
	}
	if _, err := r.waitState(ctx, TaskID, "plan v1 sent back", func(s workspace.State) bool {
		return s.PlanStatus == machine.PlanRevisionNeeded && s.RevisionCount == 1
	}); err != nil {
		return err
	}

	// Plan v2, approved: the subtasks start.
	v2 := planV2(r.cfg.Agents)
	if err := r.propose(ctx, v2); err != nil {
		return err
	}
	if err := r.review(ctx, "plan_v2", machine.ReviewPlan, "plan_auth_api_v2", machine.VerdictApproved, nil,
		"Rate limiting and tests added; approved"); err != nil {
		return err
	}
	if _, err := r.waitState(ctx, TaskID, "plan v2 approved", func(s workspace.State) bool {
		return s.Status == vocab.StatusExecuting
	}); err != nil {
		return err
	}

	// Workers and the checkpoint reviewer, in parallel. The first of them
	// to fail stops the others.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	spawn := func(f func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(wctx); err != nil {
				mu.Lock()
				if firstErr == nil && !errors.Is(err, context.Canceled) {
					firstErr = err
				}
				mu.Unlock()
				cancel()
			}
		}()
	}
	for i := 1; i <= r.cfg.Agents; i++ {
		spawn(func(ctx context.Context) error { return r.worker(ctx, i, v2) })
	}
	spawn(r.checkpointReviewer)
	_, err := r.waitState(wctx, TaskID, "the task to finish", func(s workspace.State) bool { return vocab.Finished(s.Status) })
	cancel()
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	if err != nil {
		return err
	}
	st, _, err := r.state(ctx, TaskID)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if st.Status != vocab.StatusCompleted {
		return fmt.Errorf("demo: task %s ended %s, not completed: %v", TaskID, st.Status, st.Errors)
	}
	r.out.say("coordinator", "task %s is completed: reporting back to the human", TaskID)
	return nil
}

// propose writes a plan version and drops the done marker that proposes it,
// then waits for the daemon to take it.
func (r *run) propose(ctx context.Context, p workspace.Plan) error {
	data, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("demo: encode plan: %w", err)
	}
	var written workspace.Plan
	_, err = service.Deliver(ctx, r.ws, workspace.DoneRequest{TaskID: TaskID, Agent: "orchestrator"}, func(ctx context.Context) (string, error) {
		var err error
		if written, err = service.WritePlan(ctx, r.ws, TaskID, "orchestrator", data); err != nil {
			return "", fmt.Errorf("demo: write plan: %w", err)
		}
		r.out.say("orchestrator", "writes plan v%d (%d subtasks, %d checkpoint(s)) and drops .done for plan.json",
			written.Version, len(written.Subtasks), len(written.Checkpoints))
		return "plan.json", nil
	}, service.DeliverOptions{})
	if merr := (*service.MarkerError)(nil); errors.As(err, &merr) {
		return fmt.Errorf("demo: propose plan: %w", merr.Err)
	}
	if err != nil {
		return err
	}
	_, err = r.waitState(ctx, TaskID, fmt.Sprintf("plan v%d proposed", written.Version), func(s workspace.State) bool {
		return s.PlanVersion == written.Version && s.PlanStatus == machine.PlanProposed
	})
	return err
}

// review writes a review as the reviewer and drops its done marker.
func (r *run) review(ctx context.Context, id, typ, target, verdict string, issues []workspace.ReviewIssue, notes string) error {
	if err := r.pause(ctx, 150*time.Millisecond); err != nil {
		return err
	}
	rv := workspace.Review{ID: id, Type: typ, Target: target, Verdict: verdict, Issues: issues, Notes: notes}
	data, err := json.Marshal(rv)
	if err != nil {
		return fmt.Errorf("demo: encode review: %w", err)
	}
	_, err = service.Deliver(ctx, r.ws, workspace.DoneRequest{TaskID: TaskID, Agent: "reviewer"}, func(ctx context.Context) (string, error) {
		rel, err := r.ws.WriteReview(ctx, TaskID, id, "reviewer", data)
		if err != nil {
			return "", fmt.Errorf("demo: write review: %w", err)
		}
		var found []string
		for _, is := range issues {
			found = append(found, is.Problem)
		}
		msg := fmt.Sprintf("%s of %s: %s", typ, target, verdict)
		if len(found) > 0 {
			msg += " (" + strings.Join(found, "; ") + ")"
		}
		r.out.say("reviewer", "%s", msg)
		return rel, nil
	}, service.DeliverOptions{})
	if merr := (*service.MarkerError)(nil); errors.As(err, &merr) {
		return fmt.Errorf("demo: report review %s: %w", id, merr.Err)
	}
	return err
}

// complexityDelay is the simulated time a subtask takes.
func complexityDelay(c string) time.Duration {
	switch c {
	case "low":
		return 150 * time.Millisecond
	case "high":
		return 450 * time.Millisecond
	}
	return 300 * time.Millisecond
}

// worker claims pending subtasks until the task is finished. Its claim may
// lose to another worker's: the daemon takes the first valid claim and
// refuses the others, and the worker learns which by reading state.json.
// A subtask the state gives it (a claim that won late) is worked on too.
func (r *run) worker(ctx context.Context, i int, p workspace.Plan) error {
	me := workerName(i)
	byID := map[string]workspace.Subtask{}
	for _, s := range p.Subtasks {
		byID[s.ID] = s
	}
	for round := 0; ; round++ {
		var target string
		var st workspace.State
		err := r.until(ctx, me+" to find work", func() (bool, error) {
			s, _, err := r.state(ctx, TaskID)
			if err != nil {
				return false, err
			}
			st = s
			if vocab.Finished(s.Status) {
				return true, nil
			}
			ids := slices.Sorted(maps.Keys(s.Subtasks))
			for _, id := range ids {
				if ss := s.Subtasks[id]; ss.Status == machine.SubtaskInProgress && ss.Worker == me {
					target = id // ours already (a claim that won late)
					return true, nil
				}
			}
			var pending []string
			for _, id := range ids {
				if s.Subtasks[id].Status == machine.SubtaskPending {
					pending = append(pending, id)
				}
			}
			if len(pending) > 0 {
				target = pending[(i+round)%len(pending)]
				return true, nil
			}
			return false, nil
		})
		if err != nil {
			return err
		}
		if vocab.Finished(st.Status) {
			return nil
		}
		ss := st.Subtasks[target]
		if ss.Status == machine.SubtaskPending {
			r.out.say(me, "claims %s (%s)", target, byID[target].Description)
			if _, err := r.ws.WriteClaim(ctx, TaskID, me, target); err != nil {
				return fmt.Errorf("demo: %s: %w", me, err)
			}
			st, err = r.waitState(ctx, TaskID, me+"'s claim of "+target+" to be decided", func(s workspace.State) bool {
				return s.Subtasks[target].Status != machine.SubtaskPending || vocab.Finished(s.Status)
			})
			if err != nil {
				return err
			}
			ss = st.Subtasks[target]
			if ss.Status != machine.SubtaskInProgress || ss.Worker != me {
				r.out.say(me, "lost %s to %s: picks something else", target, ss.Worker)
				continue
			}
		}
		if err := r.work(ctx, me, byID[target], ss.Attempts); err != nil {
			return err
		}
	}
}

// work does one attempt of a subtask: the first attempt of FailingSubtask
// fails (a missing configuration a retry supplies), every other succeeds.
func (r *run) work(ctx context.Context, me string, s workspace.Subtask, attempt int) error {
	if err := r.pause(ctx, complexityDelay(s.EstimatedComplexity)); err != nil {
		return err
	}
	out := workspace.Output{SubtaskID: s.ID, WorkerID: me, Status: "completed",
		Summary:   fmt.Sprintf("%s (attempt %d by %s)", s.Description, attempt, me),
		Decisions: []string{fmt.Sprintf("%s done as planned", s.ID)}}
	failed := s.ID == FailingSubtask && attempt == 1
	if failed {
		out.Status, out.Error = "failed", "rate limiter store not configured: REDIS_URL is unset"
		out.Summary = "Could not finish: " + out.Error
	} else {
		out.FilesCreated = []string{fmt.Sprintf("src/api/%s.py", s.ID)}
	}
	data, err := json.Marshal(out)
	if err != nil {
		return fmt.Errorf("demo: encode output: %w", err)
	}
	req := workspace.DoneRequest{TaskID: TaskID, Agent: me, SubtaskID: s.ID}
	if failed {
		req.Status, req.Error = "failed", out.Error
	}
	_, err = service.Deliver(ctx, r.ws, req, func(ctx context.Context) (string, error) {
		rel, err := r.ws.WriteOutput(ctx, TaskID, s.ID, me, data)
		if err != nil {
			return "", err
		}
		if failed {
			r.out.say(me, "fails %s: %s", s.ID, out.Error)
		} else {
			r.out.say(me, "finishes %s and drops .done for %s", s.ID, rel)
		}
		return rel, nil
	}, service.DeliverOptions{})
	if merr := (*service.MarkerError)(nil); errors.As(err, &merr) {
		err = merr.Err // the output is written; its marker failed
	}
	if err != nil {
		return fmt.Errorf("demo: %s: %w", me, err)
	}
	_, err = r.waitState(ctx, TaskID, me+"'s "+s.ID+" to be taken", func(st workspace.State) bool {
		ss := st.Subtasks[s.ID]
		return vocab.Finished(st.Status) || ss.Status != machine.SubtaskInProgress || ss.Worker != me || ss.Attempts != attempt
	})
	return err
}

// checkpointReviewer approves the checkpoint once the daemon says it awaits
// review.
func (r *run) checkpointReviewer(ctx context.Context) error {
	st, err := r.waitState(ctx, TaskID, CheckpointID+" to await review", func(s workspace.State) bool {
		cp := s.Checkpoints[CheckpointID]
		return vocab.Finished(s.Status) || (cp != nil && cp.Status == machine.CheckpointAwaitingReview)
	})
	if err != nil || vocab.Finished(st.Status) {
		return err
	}
	r.out.say("reviewer", "checks the outputs of %s", CheckpointID)
	return r.review(ctx, CheckpointID, machine.ReviewCheckpoint, CheckpointID, machine.VerdictApproved, nil,
		"Project, users, tokens and rate limiting look right")
}

// The ARC-AGI puzzle the solver shares with the observer.
var arcPuzzle = map[string]any{
	"task_id":     "training-001",
	"input_grid":  [][]int{{0, 1, 2}, {3, 4, 5}, {6, 7, 8}},
	"output_grid": [][]int{{8, 7, 6}, {5, 4, 3}, {2, 1, 0}},
	"test_input":  [][]int{{1, 0, 0}, {0, 2, 0}, {0, 0, 3}},
}

// arc plays the ARC walkthrough: the solver stores the puzzle once, the
// observer (delegated to with intent only) lists, reads and stores the
// patterns it sees, and the solver reads them back.
func (r *run) arc(ctx context.Context) error {
	ws := r.ws
	r.out.say("human", "asks the coordinator: \"Solve ARC task training-001\"")
	if _, err := ws.CreateTask(ctx, workspace.NewTaskRequest{ID: ARCTaskID, Description: "Solve ARC task training-001",
		SubmittedBy: "human", To: "coordinator"}); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	toSolver, err := ws.NewThread(ctx, workspace.NewThreadRequest{TaskID: ARCTaskID, ID: "th_solver", From: "coordinator", To: "solver",
		Message: "Solve ARC task training-001", Concern: "solve the puzzle"})
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	r.out.say("coordinator", "delegates to the solver (thread %s)", toSolver.ID)
	env := workspace.Scope{Kind: workspace.ScopeThread, TaskID: ARCTaskID}
	puzzle, err := json.Marshal(arcPuzzle)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if _, err := ws.StoreEntry(ctx, env, workspace.StoreRequest{Key: "arc_task", Agent: "solver", Value: puzzle,
		Description: "The current ARC-AGI puzzle: task training-001, a 3x3 input grid, its expected output and a 3x3 test input."}); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	r.out.say("solver", "loads training-001 and stores it once as env data arc_task")
	toObserver, err := ws.NewThread(ctx, workspace.NewThreadRequest{TaskID: ARCTaskID, ID: "th_observer", ParentID: toSolver.ID,
		From: "solver", To: "observer", Message: "What patterns do you notice in the current task?",
		Concern: "patterns in the puzzle", Buffers: []string{"env:arc_task"}})
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	r.out.say("solver", "delegates to the observer with intent only: %q", toObserver.Message)
	pre, err := service.Preamble(ctx, ws, toObserver.ID, ops.PreambleOptions{TaskID: ARCTaskID})
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	r.preamble = pre.Text
	if !r.cfg.Quiet {
		r.out.line("  agent  %-13s receives this preamble before the message:", "observer")
		for _, l := range strings.Split(strings.TrimRight(pre.Text, "\n"), "\n") {
			r.out.line("         | %s", l)
		}
	}
	items, err := ws.ListEntries(ctx, env)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	var keys []string
	for _, it := range items {
		keys = append(keys, it.Key)
	}
	r.out.say("observer", "list_env_data: %s", strings.Join(keys, ", "))
	e, err := ws.GetEntry(ctx, env, "arc_task")
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	var got struct {
		Input  [][]int `json:"input_grid"`
		Output [][]int `json:"output_grid"`
	}
	if err := json.Unmarshal(e.Value, &got); err != nil {
		return fmt.Errorf("demo: arc_task: %w", err)
	}
	patterns := observe(got.Input, got.Output)
	pv, _ := json.Marshal(patterns)
	if _, err := ws.StoreEntry(ctx, env, workspace.StoreRequest{Key: "observed_patterns", Agent: "observer", Value: pv,
		Description: "Patterns the observer found in arc_task: " + strings.Join(patterns, ", ") + "."}); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	r.out.say("observer", "get_env_data arc_task, stores observed_patterns = %s", strings.Join(patterns, ", "))
	if _, err := ws.UpdateThread(ctx, ARCTaskID, toObserver.ID, "observer", workspace.ThreadUpdate{Status: ptr("done"),
		Progress: ptr("found " + strings.Join(patterns, ", "))}); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	seen, err := ws.GetEntry(ctx, env, "observed_patterns")
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	var ps []string
	if err := json.Unmarshal(seen.Value, &ps); err != nil {
		return fmt.Errorf("demo: observed_patterns: %w", err)
	}
	answer := arcPuzzle["test_input"].([][]int)
	if slices.Contains(ps, "rotation_180") {
		answer = rotate180(answer)
	}
	av, _ := json.Marshal([]map[string]any{{"rule": ps, "output": answer, "verdict": "pending"}})
	if _, err := ws.StoreEntry(ctx, env, workspace.StoreRequest{Key: "solution_attempts", Agent: "solver", Value: av,
		Description: "One attempt so far: the test input rotated 180 degrees."}); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	r.out.say("solver", "reads observed_patterns, stores solution_attempts: %v", answer)
	if _, err := ws.UpdateThread(ctx, ARCTaskID, toSolver.ID, "solver", workspace.ThreadUpdate{Status: ptr("done"),
		Progress: ptr("one attempt stored in solution_attempts")}); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// observe names the patterns between a grid and its output.
func observe(in, out [][]int) []string {
	var ps []string
	if equalGrids(rotate180(in), out) {
		ps = append(ps, "rotation_180")
	}
	var a, b []int
	for _, row := range in {
		a = append(a, row...)
	}
	for _, row := range out {
		b = append(b, row...)
	}
	slices.Sort(a)
	slices.Sort(b)
	if slices.Equal(a, b) {
		ps = append(ps, "colour_preserving")
	}
	return ps
}

func rotate180(g [][]int) [][]int {
	out := make([][]int, len(g))
	for i, row := range g {
		r := slices.Clone(row)
		slices.Reverse(r)
		out[len(g)-1-i] = r
	}
	return out
}

func equalGrids(a, b [][]int) bool {
	return slices.EqualFunc(a, b, func(x, y []int) bool { return slices.Equal(x, y) })
}

// frictionLog is the workspace's friction log.
func (r *run) frictionLog(ctx context.Context) *friction.Log {
	return friction.Open(r.ws, "demo")
}

// friction makes sure the revision and the failure are on record: by the
// daemon's detectors when the thresholds let them fire with one revision
// and one failure (the demo sets them so in a workspace it creates), else
// added explicitly with friction.Log.Add.
func (r *run) friction(ctx context.Context) error {
	log := r.frictionLog(ctx)
	want := []string{friction.TypeRepeatedRevision, friction.TypeWorkerFailure}
	has := func() (map[string]bool, error) {
		es, err := log.List(ctx, friction.Filter{})
		if err != nil {
			return nil, err
		}
		got := map[string]bool{}
		for _, e := range es {
			if slices.Contains(e.AffectedTasks, TaskID) {
				got[e.Type] = true
			}
		}
		return got, nil
	}
	fs := r.ws.Settings().Friction
	if fs.RevisionLimit <= 1 && fs.FailureRepeats <= 1 {
		// The detectors run right after the state write that emitted the
		// event, so the entries are normally there already.
		err := r.until(ctx, "the daemon's friction entries", func() (bool, error) {
			got, err := has()
			return err == nil && got[want[0]] && got[want[1]], err
		})
		if err == nil {
			r.byDetectors = true
			return nil
		}
		if !errors.Is(err, ErrTimeout) {
			return err
		}
	}
	got, err := has()
	if err != nil {
		return fmt.Errorf("demo: read friction: %w", err)
	}
	add := []friction.Entry{
		{Type: friction.TypeRepeatedRevision, Description: "The plan of task " + TaskID + " was sent back for revision: rate limiting was missing.",
			Pattern: "plan sent back for revision", AffectedTasks: []string{TaskID},
			SuggestedAction: "Remind the orchestrator to cover every constraint of the task in its plan."},
		{Type: friction.TypeWorkerFailure, Description: "Subtask " + FailingSubtask + " of task " + TaskID + " failed once: the rate limiter store was not configured.",
			Pattern: "rate limiter store not configured", AffectedTasks: []string{TaskID},
			SuggestedAction: "Give workers the rate limiter's store (REDIS_URL) in the task context."},
	}
	for _, e := range add {
		if got[e.Type] {
			continue
		}
		stored, isNew, err := log.Add(ctx, e)
		if err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		r.ws.NoteFriction(ctx, friction.Recorded(stored, isNew), e.AffectedTasks)
	}
	return nil
}
