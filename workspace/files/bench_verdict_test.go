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

func benchReadVerdict(b *testing.B, size int) {
	ws, err := Init(b.TempDir(), workspace.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
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
	b.ResetTimer()
	for range b.N {
		v, where, err := ws.ReadVerdict(task, path.Base(name), 0)
		if err != nil || where != workspace.MarkerDecided || v.Verdict != workspace.VerdictWon || v.SubtaskStatus == "" {
			b.Fatalf("verdict %+v where %s err %v", v, where, err)
		}
	}
}
