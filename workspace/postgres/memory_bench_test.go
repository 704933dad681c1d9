package postgres

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// BenchmarkMemoryPut: a memory put as one statement (the driver's
// PutMemory) against the same put in five (BEGIN, the row FOR UPDATE, the
// write, the event, COMMIT: sqlstore.PutMemoryIn in a transaction, as
// before), alternated within each round so that both meet the same load:
// one writer's median latency, and the puts a second of 8 and 16 writers
// at once, each on keys of its own. Run it with
//
//	go test -run '^$' -bench MemoryPut -benchtime 5x ./workspace/postgres/
func BenchmarkMemoryPut(b *testing.B) {
	ctx := context.Background()
	s, _ := newStore(b)
	d := driver{s}
	put := map[string]func(req workspace.MemoryPutRequest) error{
		"one": func(req workspace.MemoryPutRequest) error {
			_, err := s.PutMemory(ctx, req)
			return err
		},
		"five": func(req workspace.MemoryPutRequest) error {
			p, err := sqlstore.NewMemoryPut(ctx, req, sqlstore.Now())
			if err != nil {
				return err
			}
			return d.Write(ctx, func(tx sqlstore.Executor) error {
				_, _, err := sqlstore.PutMemoryIn(ctx, tx, dialect, p)
				return err
			})
		},
	}
	req := func(w, i int) workspace.MemoryPutRequest {
		return workspace.MemoryPutRequest{Namespace: workspace.Namespace{"bench", fmt.Sprint("w", w)}, Key: fmt.Sprint("k", i%10), Value: kibObject, Agent: "a"}
	}
	const each = 40
	latency := func(how string) time.Duration {
		ts := make([]time.Duration, 0, each)
		for i := range each {
			t0 := time.Now()
			if err := put[how](req(0, i)); err != nil {
				b.Fatal(err)
			}
			ts = append(ts, time.Since(t0))
		}
		slices.Sort(ts)
		return ts[len(ts)/2]
	}
	rate := func(how string, writers int) float64 {
		t0 := time.Now()
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for i := range each {
					if err := put[how](req(w, i)); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		return float64(writers*each) / time.Since(t0).Seconds()
	}
	latency("one")
	latency("five") // warm up
	sum := map[string]float64{}
	for r := 0; b.Loop(); r++ {
		order := []string{"one", "five"}
		if r%2 == 1 {
			order = []string{"five", "one"}
		}
		for _, how := range order {
			sum[how+"-ms"] += float64(latency(how).Microseconds()) / 1000
			sum[how+"-8/s"] += rate(how, 8)
			sum[how+"-16/s"] += rate(how, 16)
		}
	}
	for k, v := range sum {
		b.ReportMetric(v/float64(b.N), k)
	}
}
