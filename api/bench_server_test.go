package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/httpauth"
	"github.com/workspaced/workspaced/internal/pgtest"
	"github.com/workspaced/workspaced/internal/poll"
	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/tokens"
)

// BenchmarkBatchServerCPU: what the server spends on an item of a batch,
// on PostgreSQL. 16 writers at once each hand the API's handler itself
// (no listener, no client: the process's CPU is the server's) a
// POST /memory/batch of 16 puts of 1 KiB with a bearer token, every
// round of b.Loop. It reports per item the wall time (ns/item), the
// process's CPU time (cpu-ns/item), allocations (allocs/item, B/item),
// and the database's committed transactions a batch (xact/batch, from
// pg_stat_database once its count stands still). Run it with
//
//	go test -run '^$' -bench BatchServerCPU -benchtime 200x ./api/
func BenchmarkBatchServerCPU(b *testing.B) {
	const writers, each = 16, 16
	ctx := context.Background()
	root := pgtest.DB(b)
	if _, err := service.Init(ctx, root, service.Roles{}); err != nil {
		b.Fatal(err)
	}
	st, err := service.Open(ctx, root, service.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	keeper, err := service.Tokens("bench", st)
	if err != nil {
		b.Fatal(err)
	}
	tok, _, err := tokens.Add(ctx, keeper, tokens.Grant{Agent: "bench", Tasks: []string{"*"}, GlobalMemory: tokens.GlobalWrite})
	if err != nil {
		b.Fatal(err)
	}
	h := New(Config{Store: st, Gate: &httpauth.Gate{Keeper: keeper}, Log: quiet})
	value := map[string]any{"text": strings.Repeat("x", 1000)}
	bodies := make([][]byte, writers)
	for w := range bodies {
		puts := make([]any, each)
		for i := range puts {
			puts[i] = map[string]any{"namespace": []string{"bench", fmt.Sprint("w", w)}, "key": fmt.Sprint("k", i), "value": value}
		}
		bodies[w], _ = json.Marshal(map[string]any{"puts": puts})
	}
	post := func(w int) error {
		req := httptest.NewRequest("POST", "/api/v1/memory/batch", bytes.NewReader(bodies[w]))
		req.RemoteAddr, req.Host = "127.0.0.1:40000", "127.0.0.1"
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tok)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if out := rec.Body.Bytes(); rec.Code != 200 || bytes.Contains(out, []byte(`"status":412`)) {
			return fmt.Errorf("batch: %d %s", rec.Code, out)
		}
		return nil
	}
	round := func() {
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				if err := post(w); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
	}
	for range 5 {
		round() // the items made, the token's grant remembered
	}
	commits := xactCommits(b, root)
	before := commits()
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	cpu0 := processCPU()
	b.ResetTimer()
	rounds := 0
	for b.Loop() {
		round()
		rounds++
	}
	b.StopTimer()
	cpu := processCPU() - cpu0
	runtime.ReadMemStats(&m1)
	items := float64(rounds * writers * each)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/items, "ns/item")
	b.ReportMetric(float64(cpu.Nanoseconds())/items, "cpu-ns/item")
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/items, "allocs/item")
	b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/items, "B/item")
	b.ReportMetric(float64(commits()-before)/float64(rounds*writers), "xact/batch")
}

// processCPU is the process's CPU time so far, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// xactCommits reads the transactions committed in root's database once
// the count has stood still for a second (a backend reports its counts
// when it goes idle, at most once a second), through a connection to the
// cluster's own database so that the reads count nothing.
func xactCommits(b *testing.B, root string) func() int64 {
	ctx := context.Background()
	u, err := url.Parse(root)
	if err != nil {
		b.Fatal(err)
	}
	db := strings.TrimPrefix(u.Path, "/")
	admin, err := pgtest.Shared(b).Admin(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { admin.Close(ctx) })
	return func() int64 {
		var last int64 = -1
		since := time.Now()
		poll.Until(b, time.Minute, "xact_commit standing still", func() (bool, string) {
			var n int64
			if _, err := admin.Exec(ctx, "SELECT pg_stat_clear_snapshot()"); err != nil {
				b.Fatal(err)
			}
			if err := admin.QueryRow(ctx, "SELECT xact_commit FROM pg_stat_database WHERE datname = $1", db).Scan(&n); err != nil {
				b.Fatal(err)
			}
			if n != last {
				last, since = n, time.Now()
			}
			return time.Since(since) > 1500*time.Millisecond, fmt.Sprint("xact_commit ", n)
		})
		return last
	}
}
