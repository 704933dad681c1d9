package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/poll"
	"github.com/workspaced/workspaced/workspace"
)

// TestConcurrentMemoryPutsReadOnceInOrder: 16 writers at once put memory
// items (their own keys and two shared ones), each put one statement,
// while one transaction holds a memory event open from before they start
// until after they end. A reader going on from the positions it is given
// gets every event exactly once, the held one included, in the order a
// whole read gives them, with the versions of a shared key in the order
// they were given and each put's version its event's.
func TestConcurrentMemoryPutsReadOnceInOrder(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	var mu sync.Mutex
	var got []string
	rctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		var pos int64
		for rctx.Err() == nil {
			next, err := s.ReadMemoryEvents(rctx, pos, func(e workspace.PositionedEvent) {
				mu.Lock()
				got = append(got, memKey(e.Event))
				mu.Unlock()
			})
			if err != nil && rctx.Err() == nil {
				t.Errorf("read from %d: %v", pos, err)
				return
			}
			pos = next
			select {
			case <-rctx.Done():
			case <-time.After(5 * time.Millisecond):
			}
		}
	})
	defer func() { stop(); wg.Wait() }()

	held, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Rollback(ctx)
	// It sits idle for as long as the writers take, on a loaded machine
	// longer than the store's bound on an idle transaction.
	if _, err := held.Exec(ctx, "SET LOCAL idle_in_transaction_session_timeout = 0"); err != nil {
		t.Fatal(err)
	}
	if _, err := held.Exec(ctx, "INSERT INTO memory_events (time, line) VALUES (now(), $1)",
		workspace.FormatEvent(workspace.Event{Time: now(), Name: "held"})); err != nil {
		t.Fatal(err)
	}
	const writers, each = 16, 20
	ns := workspace.Namespace{"order"}
	var ww sync.WaitGroup
	var emu sync.Mutex
	given := map[string]bool{} // "key version" of every put's answer
	for w := range writers {
		ww.Go(func() {
			for i := range each {
				k := fmt.Sprintf("w%d", w)
				if i%2 == 1 {
					k = fmt.Sprintf("shared%d", i%4/2)
				}
				it, err := s.PutMemory(ctx, workspace.MemoryPutRequest{Namespace: ns, Key: k, Value: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)), Agent: "po"})
				if err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
				emu.Lock()
				given[fmt.Sprintf("%s %d", k, it.Version)] = true
				emu.Unlock()
			}
		})
	}
	ww.Wait()
	if err := held.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	total := 1 + writers*each
	// A read stops before the transactions still running anywhere in the
	// cluster (the other tests' too): read whole until it has them all.
	var whole []string
	poll.Until(t, time.Minute, "a whole read has every event", func() (bool, string) {
		whole = whole[:0]
		_, err := s.ReadMemoryEvents(ctx, 0, func(e workspace.PositionedEvent) { whole = append(whole, memKey(e.Event)) })
		if err != nil {
			t.Fatalf("a whole read: %v", err)
		}
		return len(whole) == total, fmt.Sprintf("%d of %d", len(whole), total)
	})
	poll.Until(t, time.Minute, "the reader has every event", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= total, fmt.Sprintf("%d of %d", len(got), total)
	})
	mu.Lock()
	read := slices.Clone(got)
	mu.Unlock()
	if !slices.Equal(read, whole) {
		t.Fatalf("the reader going on from positions read %d events, another order than a whole read's %d", len(read), len(whole))
	}
	if !slices.Contains(read, "held") {
		t.Fatal("the reader never read the event held open")
	}
	last := map[string]int{}
	for _, k := range read {
		var name string
		var v int
		if n, _ := fmt.Sscanf(k, "memory_stored %s %d", &name, &v); n != 2 {
			continue
		}
		if !given[fmt.Sprintf("%s %d", name, v)] {
			t.Errorf("event of %s at version %d, which no put answered", name, v)
		}
		if v != last[name]+1 {
			t.Errorf("%s version %d after %d", name, v, last[name])
		}
		last[name] = v
	}
}

// memKey names a memory event of the test by its key and version.
func memKey(e workspace.Event) string {
	if e.Name == "memory_stored" {
		return "memory_stored " + e.Attrs["key"] + " " + e.Attrs["version"]
	}
	return e.Name
}
