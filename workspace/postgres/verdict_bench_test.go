package postgres

import (
	"path"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/fixture"
	"github.com/workspaced/workspaced/internal/poll"
	"github.com/workspaced/workspaced/internal/servetest"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/daemon"
)

// BenchmarkReadVerdict10000 times the read of one claim's verdict in a
// task of 10,000 subtasks, the claim decided (what a waiter reads once
// its claim is committed): one snapshot, the marker's and journal's rows
// and the state's document, scanned.
func BenchmarkReadVerdict10000(b *testing.B) {
	s, _ := newStore(b)
	servetest.Start(b, s, daemon.Config{})
	ctx := b.Context()
	const task = "verdict"
	if err := fixture.PrepareTask(ctx, s, task, 10000); err != nil {
		b.Fatal(err)
	}
	poll.State(b, time.Minute, s, task, func(st workspace.State) bool { return st.PlanStatus == "proposed" })
	if err := fixture.ApprovePlan(ctx, s, task); err != nil {
		b.Fatal(err)
	}
	poll.State(b, time.Minute, s, task, func(st workspace.State) bool { return st.Status == "executing" })
	name, err := s.WriteClaim(ctx, task, "agent_1", "st_5000")
	if err != nil {
		b.Fatal(err)
	}
	name = path.Base(name)
	poll.Until(b, time.Minute, "the claim decided", func() (bool, string) {
		_, where, err := s.ReadVerdict(task, name, 0)
		return err == nil && where == workspace.MarkerDecided, where
	})
	b.ResetTimer()
	for range b.N {
		v, _, err := s.ReadVerdict(task, name, 0)
		if err != nil || v.Verdict != workspace.VerdictWon || v.SubtaskStatus == "" {
			b.Fatalf("verdict %+v, %v", v, err)
		}
	}
}
