package files

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/workspace"
)

func value1KiB() json.RawMessage {
	return json.RawMessage(`"` + strings.Repeat("v", 1022) + `"`)
}

// benchScope is a thread scope of a fresh task, as agents use most.
func benchScope(b *testing.B) (*Store, workspace.Scope) {
	w, _ := newWS(b)
	w.now = time.Now
	newTask(b, w, "bench")
	return w, workspace.Scope{Kind: workspace.ScopeThread, TaskID: "bench"}
}

// interleave runs op and the floor alternately, b.N times each, and
// reports both per-op times and their ratio x_floor. Alternating keeps a
// drift in the disk's speed from favouring either side.
func interleave(b *testing.B, op func(i int)) {
	floorDir := b.TempDir()
	data := make([]byte, 1024)
	var opTime, floorTime time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t := time.Now()
		floorWrite(b, floorDir, "target.json", data)
		floorTime += time.Since(t)
		t = time.Now()
		op(i)
		opTime += time.Since(t)
	}
	b.StopTimer()
	b.ReportMetric(float64(opTime.Nanoseconds())/float64(b.N), "op_ns")
	b.ReportMetric(float64(floorTime.Nanoseconds())/float64(b.N), "floor_ns")
	b.ReportMetric(float64(opTime)/float64(floorTime), "x_floor")
}

func BenchmarkEnvStore(b *testing.B) {
	w, sc := benchScope(b)
	ctx := context.Background()
	v := value1KiB()
	interleave(b, func(i int) {
		if _, err := w.StoreEntry(ctx, sc, workspace.StoreRequest{Key: "arc_task", Description: "the puzzle", Value: v, Agent: "solver"}); err != nil {
			b.Fatal(err)
		}
	})
}

func BenchmarkEnvGet(b *testing.B) {
	w, sc := benchScope(b)
	ctx := context.Background()
	if _, err := w.StoreEntry(ctx, sc, workspace.StoreRequest{Key: "arc_task", Description: "the puzzle", Value: value1KiB(), Agent: "solver"}); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := w.GetEntry(ctx, sc, "arc_task"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEnvUpdate(b *testing.B) {
	w, sc := benchScope(b)
	ctx := context.Background()
	v := value1KiB()
	if _, err := w.StoreEntry(ctx, sc, workspace.StoreRequest{Key: "arc_task", Description: "the puzzle", Value: v, Agent: "solver"}); err != nil {
		b.Fatal(err)
	}
	interleave(b, func(i int) {
		if _, err := w.UpdateEntry(ctx, sc, workspace.UpdateRequest{Key: "arc_task", Value: v, Agent: "solver", IfVersion: i + 1}); err != nil {
			b.Fatal(err)
		}
	})
}

const (
	listEntries    = 1000
	listValueBytes = 100 << 10
)

// listFixture fills a scope with listEntries entries of about
// listValueBytes each, written canonically (not durably: the fixture is
// not what is measured).
func listFixture(b *testing.B) (*Store, workspace.Scope, string) {
	b.Helper()
	w, sc := benchScope(b)
	dir := filepath.Join(w.Dir(), "tasks", "bench", "env")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	var sb strings.Builder
	sb.WriteString(`{"grid":[`)
	for i := 0; sb.Len() < listValueBytes-16; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, "%d", i%10)
	}
	sb.WriteString(`]}`)
	value := json.RawMessage(sb.String())
	now := time.Now().UTC()
	for i := range listEntries {
		key := fmt.Sprintf("key_%04d", i)
		data, err := atomicfile.Marshal(workspace.Entry{Key: key, ShortDescription: "entry " + key, StoredBy: "solver", CreatedAt: now, UpdatedAt: now, Version: 1, Value: value})
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, workspace.EncodeKey(key)+".json"), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return w, sc, dir
}

// fullDecode reads and decodes every entry file whole: what a manifest
// would cost without streaming.
func fullDecode(b *testing.B, dir string) int {
	ents, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, de := range ents {
		if strings.HasPrefix(de.Name(), ".") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, de.Name()))
		if err != nil {
			b.Fatal(err)
		}
		var e workspace.Entry
		if err := json.Unmarshal(data, &e); err != nil {
			b.Fatal(err)
		}
		n++
	}
	return n
}

func BenchmarkEnvList(b *testing.B) {
	w, sc, dir := listFixture(b)
	ctx := context.Background()
	// The full decode, measured in the same run for the ratio.
	const fullRuns = 1
	t := time.Now()
	for range fullRuns {
		if n := fullDecode(b, dir); n != listEntries {
			b.Fatalf("decoded %d entries", n)
		}
	}
	full := time.Since(t) / fullRuns
	var listTime time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t := time.Now()
		items, err := w.ListEntries(ctx, sc)
		listTime += time.Since(t)
		if err != nil || len(items) != listEntries {
			b.Fatalf("list = %d items, %v", len(items), err)
		}
	}
	b.StopTimer()
	per := listTime / time.Duration(b.N)
	b.ReportMetric(float64(per.Microseconds())/1000, "ms/list")
	b.ReportMetric(float64(full)/float64(per), "x_faster_than_full")
}

func BenchmarkEnvListFullDecode(b *testing.B) {
	_, _, dir := listFixture(b)
	b.ResetTimer()
	for b.Loop() {
		if n := fullDecode(b, dir); n != listEntries {
			b.Fatalf("decoded %d entries", n)
		}
	}
}
