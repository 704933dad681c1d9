package sqlite

import (
	"fmt"
	"path"
	"testing"

	"github.com/workspaced/workspaced/internal/fixture"
	"github.com/workspaced/workspaced/internal/servetest"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/daemon"
)

// BenchmarkReadVerdict10000 times the read of one claim's verdict in a
// task of 10,000 subtasks, the claim decided (what a waiter reads once
// its claim is committed).
func BenchmarkReadVerdict10000(b *testing.B) {
	s, _ := newStore(b)
	w := newDBWatch(b, s)
	servetest.Start(b, s, daemon.Config{})
	ctx := b.Context()
	const task = "verdict"
	state := func(want func(workspace.State) bool) func() bool {
		return func() bool { st, err := s.ReadState(ctx, task); return err == nil && want(st) }
	}
	if err := fixture.PrepareTask(ctx, s, task, 10000); err != nil {
		b.Fatal(err)
	}
	w.until(b, "plan proposed", state(func(st workspace.State) bool { return st.PlanStatus == "proposed" }))
	if err := fixture.ApprovePlan(ctx, s, task); err != nil {
		b.Fatal(err)
	}
	w.until(b, "executing", state(func(st workspace.State) bool { return st.Status == "executing" }))
	name, err := s.WriteClaim(ctx, task, "agent_1", fmt.Sprintf("st_%d", 5000))
	if err != nil {
		b.Fatal(err)
	}
	name = path.Base(name)
	w.until(b, "the claim decided", func() bool {
		_, where, err := s.ReadVerdict(task, name, 0)
		return err == nil && where == workspace.MarkerDecided
	})
	b.ResetTimer()
	for range b.N {
		v, _, err := s.ReadVerdict(task, name, 0)
		if err != nil || v.Verdict != workspace.VerdictWon || v.SubtaskStatus == "" {
			b.Fatalf("verdict %+v, %v", v, err)
		}
	}
}
