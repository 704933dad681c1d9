package postgres

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// kibObject is a 1 KiB JSON object, as a memory item's value must be.
var kibObject = []byte(`{"v":"` + strings.Repeat("x", 1016) + `"}`)

// BenchmarkWriters: 8 and 16 writers at once, each storing 1 KiB env data
// of one task (env) or namespaced memory items (memory) under keys of its
// own, with the events read as migration 0009 has them (unlocked) and,
// alternating with it in each round so that both meet the same load, with
// the schema-wide events lock of migrations 0004 and 0007 put back
// (locked). It reports each one's puts a second and their ratio. Run it
// with
//
//	go test -run '^$' -bench Writers -benchtime 5x ./workspace/postgres/
func BenchmarkWriters(b *testing.B) {
	for _, kind := range []string{"env", "memory"} {
		for _, writers := range []int{8, 16} {
			b.Run(fmt.Sprintf("%s/%d", kind, writers), func(b *testing.B) {
				ctx := context.Background()
				s, _ := newStore(b)
				if err := s.PutTask(ctx, workspace.Task{ID: "t1", Description: "bench"}); err != nil {
					b.Fatal(err)
				}
				const each = 40
				put := func(w, i int) error {
					if kind == "env" {
						_, err := s.StoreEntry(ctx, workspace.Scope{Kind: workspace.ScopeThread, TaskID: "t1"},
							workspace.StoreRequest{Key: fmt.Sprintf("w%d_%d", w, i%10), Description: "d", Value: kib, Agent: "a"})
						return err
					}
					_, err := s.PutMemory(ctx, workspace.MemoryPutRequest{Namespace: workspace.Namespace{"bench", fmt.Sprint("w", w)},
						Key: fmt.Sprint("k", i%10), Value: kibObject, Agent: "a"})
					return err
				}
				burst := func() float64 {
					t0 := time.Now()
					var wg sync.WaitGroup
					for w := range writers {
						wg.Go(func() {
							for i := range each {
								if err := put(w, i); err != nil {
									b.Error(err)
									return
								}
							}
						})
					}
					wg.Wait()
					return float64(writers*each) / time.Since(t0).Seconds()
				}
				lock := func(on bool) {
					q := []string{"DROP TRIGGER IF EXISTS bench_order ON events", "DROP TRIGGER IF EXISTS bench_order ON memory_events"}
					if on {
						q = append(q, `CREATE OR REPLACE FUNCTION bench_order() RETURNS trigger LANGUAGE plpgsql AS $$
							BEGIN PERFORM pg_advisory_xact_lock(hashtext(TG_TABLE_NAME), hashtext(TG_TABLE_SCHEMA)); RETURN NULL; END $$`,
							"CREATE TRIGGER bench_order BEFORE INSERT ON events FOR EACH STATEMENT EXECUTE FUNCTION bench_order()",
							"CREATE TRIGGER bench_order BEFORE INSERT ON memory_events FOR EACH STATEMENT EXECUTE FUNCTION bench_order()")
					}
					for _, q := range q {
						if _, err := s.pool.Exec(ctx, q); err != nil {
							b.Fatal(err)
						}
					}
				}
				burst() // warm up
				var unlocked, locked float64
				for r := 0; b.Loop(); r++ {
					// Alternate who goes first.
					for _, on := range []bool{r%2 == 1, r%2 == 0} {
						lock(on)
						if rate := burst(); on {
							locked += rate
						} else {
							unlocked += rate
						}
					}
				}
				n := float64(b.N)
				b.ReportMetric(unlocked/n, "unlocked-puts/s")
				b.ReportMetric(locked/n, "locked-puts/s")
				b.ReportMetric(unlocked/locked, "unlocked/locked")
			})
		}
	}
}
