package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/pairbench"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// TestMemoryBatchIsOneTransaction: a batch whose statement fails (a
// value PostgreSQL refuses, past the store's checks) writes nothing,
// neither the puts before it nor their events; the same batch without it
// writes them all. Plain puts are one statement over arrays
// (memoryRows): the batch fails as a whole; a batch with a
// compare-and-set is a statement a put, and the one in the middle that
// fails is named.
func TestMemoryBatchIsOneTransaction(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		ifAbsent bool
		want     string
	}{{"rows", false, "invalid byte sequence"}, {"statements", true, "puts[2]"}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s, _ := newStore(t)
			ctx := context.Background()
			d := driver{s}
			at := sqlstore.Now()
			ps := make([]sqlstore.MemoryPut, 5)
			for i := range ps {
				p, err := sqlstore.NewMemoryPut(ctx, workspace.MemoryPutRequest{Namespace: workspace.Namespace{"tx"}, Key: fmt.Sprint("k", i),
					Value: json.RawMessage(`{}`), Agent: "a", IfAbsent: c.ifAbsent && i == 4}, at)
				if err != nil {
					t.Fatal(err)
				}
				ps[i] = p
			}
			if _, plain := memoryRowsOf(ps); plain == c.ifAbsent {
				t.Fatalf("memoryRowsOf: plain %v, want %v", plain, !c.ifAbsent)
			}
			bad := ps[2]
			bad.Value = []byte("{\"x\":\"\x00\"}") // text holds no NUL
			broken := append(append(ps[:2:2], bad), ps[3:]...)
			_, err := d.PutMemories(ctx, broken)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("a batch with a failing statement: %v, want an error with %q", err, c.want)
			}
			count := func() (items, events int) {
				if err := s.pool.QueryRow(ctx, "SELECT (SELECT count(*) FROM memory_items), (SELECT count(*) FROM memory_events)").Scan(&items, &events); err != nil {
					t.Fatal(err)
				}
				return items, events
			}
			t.Logf("refused: %v", err)
			if items, events := count(); items != 0 || events != 0 {
				t.Fatalf("a failed batch left %d items and %d events", items, events)
			}
			ws, err := d.PutMemories(ctx, ps)
			if err != nil || len(ws) != 5 || ws[4].Version != 1 {
				t.Fatalf("the batch: %v %+v", err, ws)
			}
			if items, events := count(); items != 5 || events != 5 {
				t.Fatalf("the batch wrote %d items and %d events, want 5 and 5", items, events)
			}
		})
	}
}

// BenchmarkMemoryBatch: 16 writers at once, each storing 16 items, by
// one PutMemory each or by one PutMemoryItems of its 16, alternated
// within each round so that both meet the same load; items a second
// each way. Run it with
//
//	go test -run '^$' -bench MemoryBatch -benchtime 10x ./workspace/postgres/
func BenchmarkMemoryBatch(b *testing.B) {
	ctx := context.Background()
	s, _ := newStore(b)
	const writers, each = 16, 16
	reqs := func(w int) []workspace.MemoryPutRequest {
		out := make([]workspace.MemoryPutRequest, each)
		for i := range out {
			out[i] = workspace.MemoryPutRequest{Namespace: workspace.Namespace{"bench", fmt.Sprint("w", w)}, Key: fmt.Sprint("k", i), Value: kibObject, Agent: "a"}
		}
		return out
	}
	put := map[string]func(w int) error{
		"one": func(w int) error {
			for _, req := range reqs(w) {
				if _, err := s.PutMemory(ctx, req); err != nil {
					return err
				}
			}
			return nil
		},
		"batch": func(w int) error {
			_, err := s.PutMemoryItems(ctx, reqs(w))
			return err
		},
	}
	pairbench.Rates(b, writers, each, "one", "batch", put)
}
