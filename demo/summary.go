package demo

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/workspaced/workspaced/friction"
	"github.com/workspaced/workspaced/workspace"
)

// summary reads back what the run left in the tree.
func (r *run) summary(ctx context.Context) (Summary, error) {
	ws := r.ws
	s := Summary{Root: r.dir, Preamble: r.preamble, FrictionByDetectors: r.byDetectors}
	st, err := ws.ReadState(ctx, TaskID)
	if err != nil {
		return s, fmt.Errorf("demo: %w", err)
	}
	s.State = st
	for _, id := range slices.Sorted(maps.Keys(st.Subtasks)) {
		ss := st.Subtasks[id]
		s.Subtasks = append(s.Subtasks, SubtaskResult{ID: id, Status: ss.Status, Worker: ss.Worker, Attempts: ss.Attempts})
	}
	// Every version is kept: the current one and each it replaced.
	if p, err := ws.ReadPlan(ctx, TaskID, 0); err == nil {
		for v := 1; v <= p.Version; v++ {
			if _, err := ws.ReadPlan(ctx, TaskID, v); err == nil {
				s.PlanVersions = append(s.PlanVersions, v)
			}
		}
	}
	if s.Friction, err = r.frictionLog(ctx).List(ctx, friction.Filter{}); err != nil {
		return s, fmt.Errorf("demo: %w", err)
	}
	if s.EnvKeys, err = ws.ListEntries(ctx, workspace.Scope{Kind: workspace.ScopeThread, TaskID: ARCTaskID}); err != nil {
		return s, fmt.Errorf("demo: %w", err)
	}
	for _, id := range []string{TaskID, ARCTaskID} {
		evs, _, err := ws.ReadEvents(ctx, id)
		if err != nil {
			return s, fmt.Errorf("demo: %w", err)
		}
		s.Events += len(evs)
	}
	return s, nil
}

// printSummary ends the run: what happened and where to look.
func printSummary(out *printer, s Summary, cmd string) {
	st := s.State
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("")
	p("Summary")
	p("  task %s: %s (phase %s), plan %s v%d %s, revision_count %d", TaskID, st.Status, st.Phase, st.PlanID, st.PlanVersion, st.PlanStatus, st.RevisionCount)
	vs := make([]string, len(s.PlanVersions))
	for i, v := range s.PlanVersions {
		vs[i] = "v" + strconv.Itoa(v)
	}
	p("  plan versions kept: %s (older ones in plans/)", strings.Join(vs, ", "))
	p("  subtasks:")
	for _, t := range s.Subtasks {
		note := ""
		if t.Attempts > 1 {
			note = "  (failed once, retried)"
		}
		p("    %-5s %-10s %-10s attempts %d%s", t.ID, t.Status, t.Worker, t.Attempts, note)
	}
	for _, id := range slices.Sorted(maps.Keys(st.Checkpoints)) {
		p("  checkpoint %s: %s", id, st.Checkpoints[id].Status)
	}
	how := "added by the demo with friction.Log.Add (the daemon's detectors did not fire with this workspace's thresholds)"
	if s.FrictionByDetectors {
		how = "recorded by the daemon's detectors (this workspace.json sets friction revision_limit and failure_repeats to 1)"
	}
	p("  friction entries: %d, %s", len(s.Friction), how)
	for _, e := range s.Friction {
		p("    %s %-17s %s", e.ID, e.Type, cut(e.Description, 100))
	}
	p("  task %s env data:", ARCTaskID)
	for _, it := range s.EnvKeys {
		p("    %-18s v%d by %-9s %s", it.Key, it.Version, it.StoredBy, cut(it.ShortDescription, 70))
	}
	p("  events: %d lines in tasks/*/events.log", s.Events)
	p("")
	p("Where to look")
	p("  the tree:   %s", s.Root)
	root := shellQuote(s.Root)
	p("  the state:  %s --root %s task show --task %s", cmd, root, TaskID)
	p("  events:     %s --root %s events --task %s", cmd, root, TaskID)
	p("  env data:   %s --root %s env list --task %s", cmd, root, ARCTaskID)
	p("  friction:   %s --root %s friction list", cmd, root)
	p("  as a diff:  cd %s && git init -q && git add -A && git commit -qm run", root)
	out.mu.Lock()
	defer out.mu.Unlock()
	fmt.Fprint(out.w, b.String())
}

// shellQuote quotes s for a POSIX shell when it needs it, so that a
// suggested command can be pasted as it is.
func shellQuote(s string) string {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:@", r)) {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}
