package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// The benchmarks beside their floor: one INSERT … ON CONFLICT DO UPDATE
// of a 1 KiB row in its own committed transaction, the least a durable
// write of an entry costs on this server.

var kib = json.RawMessage(`"` + strings.Repeat("x", 1022) + `"`)

func BenchmarkFloorUpsert1KiB(b *testing.B) {
	ctx := context.Background()
	s, _ := newStore(b)
	if _, err := s.pool.Exec(ctx, "CREATE TABLE floor (k text PRIMARY KEY, v text NOT NULL)"); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := s.pool.Exec(ctx, "INSERT INTO floor (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = excluded.v",
			fmt.Sprint(i%100), string(kib)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEnvStore1KiB stores 1 KiB env data of a task (the row, its
// event, in one transaction).
func BenchmarkEnvStore1KiB(b *testing.B) {
	ctx := context.Background()
	s, _ := newStore(b)
	if err := s.PutTask(ctx, workspace.Task{ID: "t1", Description: "bench"}); err != nil {
		b.Fatal(err)
	}
	sc := workspace.Scope{Kind: workspace.ScopeThread, TaskID: "t1"}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := s.StoreEntry(ctx, sc, workspace.StoreRequest{Key: fmt.Sprint("k", i%100), Description: "d", Value: kib, Agent: "a"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEnvList1000x100KiB lists 1,000 entries of 100 KiB each,
// without reading a value.
func BenchmarkEnvList1000x100KiB(b *testing.B) {
	ctx := context.Background()
	s, _ := newStore(b)
	sc := workspace.Scope{Kind: workspace.ScopeGlobal}
	// Values that do not compress, as real data mostly does not.
	big := make([]byte, 0, 100<<10)
	big = append(big, '"')
	for x := uint32(1); len(big) < 100<<10-1; {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		big = append(big, "abcdefghijklmnopqrstuvwxyz0123456789"[x%36])
	}
	big = append(big, '"')
	for i := range 1000 {
		if _, err := s.StoreEntry(ctx, sc, workspace.StoreRequest{Key: fmt.Sprintf("key_%04d", i), Description: "a large value", Value: big, Agent: "a"}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		items, err := s.ListEntries(ctx, sc)
		if err != nil || len(items) != 1000 {
			b.Fatalf("%d items, %v", len(items), err)
		}
	}
}

// BenchmarkMarkers32Agents: 32 agents drop 8 claims each at once; the
// daemon's commit drains them with chunk markers per transaction (1: one
// commit per marker, the ceiling group commit is measured against).
func BenchmarkMarkers32Agents(b *testing.B) {
	for _, chunk := range []int{1, sqlstore.DefaultChunk} {
		b.Run(fmt.Sprintf("chunk=%d", chunk), func(b *testing.B) {
			ctx := context.Background()
			s, _ := newStore(b)
			epoch := lead(b, s, "bench")
			var taken int
			var spent time.Duration
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				id := fmt.Sprintf("t%d", i)
				plannedTask(b, s, id, 256, epoch)
				var wg sync.WaitGroup
				for a := range 32 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for k := a; k < 256; k += 32 {
							drop(b, s, id, workspace.KindClaim, workspace.Marker{AgentID: fmt.Sprintf("w%d", a), SubtaskID: fmt.Sprintf("s%d", k)})
						}
					}()
				}
				wg.Wait()
				b.StartTimer()
				t0 := time.Now()
				k := s.Committer(id) // as the serving daemon keeps it
				for {
					a, err := k.Commit(ctx, workspace.CommitRequest{Lead: epochLead(epoch), Max: chunk})
					if err != nil {
						b.Fatal(err)
					}
					if a.Taken == 0 {
						break
					}
					taken += a.Taken
				}
				spent += time.Since(t0)
			}
			b.ReportMetric(float64(taken)/spent.Seconds(), "markers/s")
		})
	}
}

// BenchmarkMemoryStore1KiB stores 1 KiB of global memory (no event).
func BenchmarkMemoryStore1KiB(b *testing.B) {
	ctx := context.Background()
	s, _ := newStore(b)
	sc := workspace.Scope{Kind: workspace.ScopeGlobal}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := s.StoreEntry(ctx, sc, workspace.StoreRequest{Key: fmt.Sprint("k", i%100), Description: "d", Value: kib, Agent: "a"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEnvStoreVsFloor interleaves the floor's upsert and an env
// store, so that both meet the same load of the machine, and reports
// each one's time and their ratio.
func BenchmarkEnvStoreVsFloor(b *testing.B) {
	ctx := context.Background()
	s, _ := newStore(b)
	if _, err := s.pool.Exec(ctx, "CREATE TABLE floor (k text PRIMARY KEY, v text NOT NULL)"); err != nil {
		b.Fatal(err)
	}
	if err := s.PutTask(ctx, workspace.Task{ID: "t1", Description: "bench"}); err != nil {
		b.Fatal(err)
	}
	sc := workspace.Scope{Kind: workspace.ScopeThread, TaskID: "t1"}
	var floor, env time.Duration
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		if _, err := s.pool.Exec(ctx, "INSERT INTO floor (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = excluded.v",
			fmt.Sprint(i%100), string(kib)); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := s.StoreEntry(ctx, sc, workspace.StoreRequest{Key: fmt.Sprint("k", i%100), Description: "d", Value: kib, Agent: "a"}); err != nil {
			b.Fatal(err)
		}
		floor, env = floor+t1.Sub(t0), env+time.Since(t1)
	}
	n := float64(b.N)
	b.ReportMetric(float64(floor.Microseconds())/n, "floor-µs/op")
	b.ReportMetric(float64(env.Microseconds())/n, "env-µs/op")
	b.ReportMetric(float64(env)/float64(floor), "env/floor")
}
