package files

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path"
	"testing"

	"github.com/workspaced/workspaced/internal/fixture"
	"github.com/workspaced/workspaced/workspace"
)

// BenchmarkReadVerdict100 times the read of one claim's verdict in a task
// of 100 subtasks, the state settled.
func BenchmarkReadVerdict100(b *testing.B) { benchReadVerdict(b, 100) }

// BenchmarkReadVerdict10000: see BenchmarkReadVerdict100.
func BenchmarkReadVerdict10000(b *testing.B) { benchReadVerdict(b, 10000) }

// BenchmarkReadState10000 times ReadState, and BenchmarkReadPlan10000
// ReadPlan, of a task of 10,000 subtasks (what `task show` reads).
func BenchmarkReadState10000(b *testing.B) {
	ws, task, _ := settledClaim(b, 10000)
	b.ResetTimer()
	for range b.N {
		if st, err := ws.ReadState(context.Background(), task); err != nil || len(st.Subtasks) != 10000 {
			b.Fatalf("state of %d subtasks, %v", len(st.Subtasks), err)
		}
	}
}

// BenchmarkReadStateHead10000 times ReadStateHead of a task of 10,000
// subtasks (what dropping a marker with a wait reads first, twice).
func BenchmarkReadStateHead10000(b *testing.B) {
	ws, task, _ := settledClaim(b, 10000)
	b.ResetTimer()
	for range b.N {
		if h, err := ws.ReadStateHead(context.Background(), task); err != nil || h.Status != "executing" {
			b.Fatalf("state head %+v, %v", h, err)
		}
	}
}

// BenchmarkReadPlan10000: see BenchmarkReadState10000.
func BenchmarkReadPlan10000(b *testing.B) {
	ws, task, _ := settledClaim(b, 10000)
	b.ResetTimer()
	for range b.N {
		if p, err := ws.ReadPlan(context.Background(), task, 0); err != nil || len(p.Subtasks) != 10000 {
			b.Fatalf("plan %v", err)
		}
	}
}

func benchReadVerdict(b *testing.B, size int) {
	ws, task, name := settledClaim(b, size)
	b.ResetTimer()
	for range b.N {
		v, where, err := ws.ReadVerdict(task, path.Base(name), 0)
		if err != nil || where != workspace.MarkerDecided || v.Verdict != workspace.VerdictWon || v.SubtaskStatus == "" {
			b.Fatalf("verdict %+v where %s err %v", v, where, err)
		}
	}
}

// settledClaim is a workspace with a task of size subtasks, its plan
// approved and one claim decided, and the claim marker's name.
func settledClaim(b testing.TB, size int) (*Store, string, string) {
	ws, err := Init(b.TempDir(), workspace.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ws.Close() })
	ws.SetServeOptions(ServeOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	d := &tester{s: ws, cs: map[string]*committer{}}
	ctx := context.Background()
	task := "verdict"
	if err := fixture.PrepareTask(ctx, ws, task, size); err != nil {
		b.Fatal(err)
	}
	process(b, d, task)
	if err := fixture.ApprovePlan(ctx, ws, task); err != nil {
		b.Fatal(err)
	}
	process(b, d, task)
	sub := fmt.Sprintf("st_%d", size/2)
	name, err := ws.WriteClaim(ctx, task, "agent_1", sub)
	if err != nil {
		b.Fatal(err)
	}
	process(b, d, task)
	settleAll(b, d)
	return ws, task, name
}
